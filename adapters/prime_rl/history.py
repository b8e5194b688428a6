"""A tracker's history of a prime-rl run (its W&B monitor's runs: the trainer's and the orchestrator's, merged by
step) -> the trace, through the same row rules as metrics.jsonl: each history row is one `monitor.log_metrics`."""

from __future__ import annotations

from benchbed.adapters.prime_rl.metrics_file import read_metric_rows
from benchbed.adapters.prime_rl.model import RunData
from benchbed.adapters.prime_rl.parse import build_trace, config_settings

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import built_history_trace
from benchbed.api import Trace


def parse_history(history: History) -> Trace:
    """The rows as the file monitor would have written them (`step`, `time` = the tracker's wall time); the
    run's config (the orchestrator's, where both processes' runs are merged) gives the batch shape. A history
    holds no episode traces, so the per-episode figures (rollout spans, sandbox starts) are absent."""
    return built_history_trace(history, _build)


def _build(history: History) -> Trace:
    uri = history.source.uri
    data = RunData()
    data.warnings.extend(history.warnings)
    rows = (
        (f"{uri} row {i}", {**values, "step": step, **({} if wall is None else {"time": wall})})
        for i, (step, wall, values) in enumerate(history.rows(), 1)
    )
    read_metric_rows(rows, data, uri)
    data.config = config_settings(history.config, history.config)
    return build_trace(data, [])
