"""A tracker's history of a verl run (W&B, MLflow, TensorBoard, as verl's `Tracking` logs to them) -> the trace,
through the same step rules as the file logger's records."""

from __future__ import annotations

from benchbed.adapters.verl.parse import Inputs, build_trace

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import built_history_trace
from benchbed.adapterkit.step_columns import StepColumns
from benchbed.api import NotThisFrameworkError, Trace


def parse_history(history: History) -> Trace:
    """Each history row is one `Tracking.log(data, step)` (rows of one step merged, as the trackers merge them)."""
    return built_history_trace(history, _build)


def _build(history: History) -> Trace:
    uri = history.source.uri
    records = StepColumns()
    for i, (step, _, data) in enumerate(history.rows()):
        if data:
            records.add(step, data, uri, i + 1)
    if not records:
        raise NotThisFrameworkError(f"not a verl history: {uri}: no rows with numeric values")
    version = history.packages.get("verl")
    return build_trace(
        Inputs(
            records=records,
            warnings=list(history.warnings),
            config=history.config or None,
            timing_source=uri,
            sources=[uri],
            explicit_version=(version, f"{history.source.tracker} run's requirements.txt") if version else None,
            extra={"history": history.source.as_dict()},  # where verl's metadata lists it, before its mode's facts
        )
    )
