"""tinker-cookbook's log folder or W&B history -> the trace through its key map (steps i_batch + 1), and each
Chrome-trace B/E pair of trace_events.jsonl (a `@scope` function or `scope_span` block) as a `native.scope/<name>`
span on a clock from the trace's first event (perf_counter microseconds: no wall-clock anchor)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchbed.adapterkit.chrome_trace import complete_events
from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import NotThisFrameworkError, Trace, TraceBuilder, attrs_json

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
METRICS, TRACE_EVENTS = "metrics.jsonl", "trace_events.jsonl"
ASYNC_STEP = "training_client/step"  # do_async_training's iteration counter (do_sync_training logs progress/batch)


def parse_path(path: Path) -> Trace:
    """A log folder (its metrics.jsonl, else its `wandb/` folder), its metrics.jsonl, or a W&B run."""
    trace = parse_history(read_run_history(path, KEYMAP.framework, (METRICS, "wandb")))
    events = (path if path.is_dir() else path.parent) / TRACE_EVENTS
    if not events.is_file():
        return trace
    warnings: list[str] = []
    table, truncated = complete_events(events, warnings)
    spans = TraceBuilder()
    origin = float(table["t0"].min()) if len(table) else 0.0
    for name, t0, t1, args in zip(table["name"], table["t0"], table["t1"], table["args"], strict=True):
        step = args.get("step")
        spans.span(f"native.scope/{name}", t0 - origin, t1 - origin, actor="trainer", attrs=attrs_json(args),
                   step=step + 1 if isinstance(step, int) and not isinstance(step, bool) else -1)  # fmt: skip
    meta = trace.meta
    meta.sources.append(str(events))
    meta.warnings.extend(warnings)
    meta.partial = meta.partial or truncated
    meta.extra["scope_clock"] = "seconds from the first trace event (perf_counter, not the wall clock)"
    return Trace(pd.concat([trace.events, spans.build(meta).events], ignore_index=True), meta).validate()


def parse_history(history: History) -> Trace:
    """Rows numbered i_batch + 1; in async mode only the training loop's rows (it logs `training_client/step`)."""
    if not any(KEYMAP.identifier().match(k) for k in history.keys):  # time/total alone is open-instruct's too
        raise NotThisFrameworkError(f"not a tinker_cookbook history: {history.source.uri} logs none of "
                                    f"{', '.join(KEYMAP.identify)}")  # fmt: skip
    mode = "async" if ASYNC_STEP in history.keys else "sync"
    frame = history.frame
    if mode == "async":
        frame = frame[frame[ASYNC_STEP].notna()]
        history.warnings.append("async: time/total times the train step alone; the wait for trajectory groups is "
                                "not logged, so trainer idle is not measured")  # fmt: skip
    history.frame = frame.assign(**{STEP: frame[STEP] + 1}).reset_index(drop=True)
    return history_trace(history, KEYMAP, adapter="tinker_cookbook", mode=mode)
