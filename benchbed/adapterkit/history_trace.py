"""A tracker history -> the canonical trace through a framework's key map: the whole parse of a framework whose runs
are per-step key/value histories (W&B, MLflow, TensorBoard, a metrics JSONL).

Keys of the roles `step`, `component`, `counter`, `framework` and `quality` become their canonical agg rows (a
pattern entry whose canonical ends in `*` carries the rest of the matched key over, `/` as `.`); percentages
(`unit = "%"`) become ratios, as canonical keys never hold percent; every other numeric key is kept as
`native.<framework>.<key>`. The entries' `within` holds for every history: a component `after_step` is added to
the step, one nested in another timer with a canonical key of its own is carved out of that timer.

A framework whose rows a key map cannot read alone (verl's resumed segments and per-step timer breakdown, slime's
rollout-id steps, prime-rl's two processes told apart by their keys) hands its own builder to `built_history_trace`;
every history's trace is finished the same way (`finish`): its source in the metadata, partial when the history
is, its GPU samples in their steps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchbed.adapterkit.gpu import with_samples
from benchbed.adapterkit.histories import History, HistoryError, history_kind, open_history
from benchbed.adapterkit.histories.console_formats import format_of, read_console_format
from benchbed.adapterkit.histories.history import STEP, WALL_TIME
from benchbed.adapterkit.keymaps import WITHIN, KeyEntry, KeyMap
from benchbed.adapterkit.rows import AggRows
from benchbed.errors import NotThisFrameworkError
from benchbed.trace import Trace, TraceBuilder, TraceMeta

MAPPED_ROLES = ("step", "component", "counter", "framework", "quality")


def read_run_history(location: Path, framework: str, names: tuple[str, ...] = ()) -> History:
    """The history at `location`, or in the first of `names` (files or folders) inside it, or the framework's own
    console log read through its console format; NotThisFrameworkError when there is none, so the registry moves on
    to the next adapter."""
    console = format_of(framework)
    if console is not None and location.is_file() and console.recognises(location):
        return read_console_format(location, console)
    for name in names:
        if (location / name).exists():
            location = location / name
            break
    if history_kind(location) is None:
        console_too = f" and is not {console.title} (no line like `{console.marks.pattern}`)" if console else ""
        raise NotThisFrameworkError(f"not a {framework} run: {location} holds no history benchbed can read"
                                    f"{console_too}")  # fmt: skip
    try:
        return open_history(location)
    except HistoryError as exc:
        raise NotThisFrameworkError(f"not a {framework} run: {exc}") from exc


def history_trace(
    history: History,
    keymap: KeyMap,
    *,
    adapter: str,
    mode: str = "",
    release: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Trace:
    """The trace of a history: one agg row per mapped key and step (actor `trainer`); NotThisFrameworkError when the
    history logs none of the key map's `step` keys."""
    release = release or keymap.releases[-1]
    entries = [e for role in MAPPED_ROLES for e in keymap.at(release, role, mode or None)]
    step_keys = [e.native for e in entries if e.role == "step"]
    mapped = {key: _map(key, entries, keymap.framework) for key in history.keys}
    if not any(entry is not None and entry.role == "step" for entry, _ in mapped.values()):
        raise NotThisFrameworkError(
            f"not a {keymap.framework} history: {history.source.uri} logs none of {', '.join(step_keys)}"
        )
    frame = _relations_applied(history.frame, entries)
    steps = frame[STEP].to_numpy(dtype=np.int64)
    rows = AggRows()
    for key, (entry, canonical) in mapped.items():
        values = frame[key].to_numpy(dtype=float)
        if entry is not None and entry.unit == "%":
            values = values / 100.0
        rows.extend_numbers(canonical, steps, values, actor="trainer")
    builder = TraceBuilder()
    rows.flush(builder)
    meta = TraceMeta(
        adapter=adapter,
        framework=keymap.framework,
        framework_version=history.packages.get(keymap.framework, release),
        mode=mode,
        sources=[str(f) for f in history.files] or [history.source.uri],
        warnings=list(history.warnings),
        partial=history.partial,
        extra={"history": history.source.as_dict(), **(extra or {})},
    )
    return finish(builder.build(meta), history)


def built_history_trace(history: History, build: Callable[[History], Trace]) -> Trace:
    """The trace a framework's own builder makes of a history, finished as every history's trace is."""
    return finish(build(history), history)


def finish(trace: Trace, history: History) -> Trace:
    """The trace of `history` with the history's source in its metadata (`extra.history`, where the builder has not
    placed it), partial when the history is, and the history's GPU samples in their steps."""
    trace.meta.extra.setdefault("history", history.source.as_dict())
    trace.meta.partial = trace.meta.partial or history.partial
    return with_gpu_samples(trace, history)


def with_gpu_samples(trace: Trace, history: History) -> Trace:
    """The trace with the history's GPU samples as `gpu.*` points, each in the step during which it was taken (the
    steps' ends are the times their rows were logged), and the epoch of the trace's zero in its metadata."""
    origin = epoch_origin(history)
    if not np.isfinite(origin):
        return trace
    if not len(history.system):  # no samples to place: the steps' log times are not needed
        trace.meta.extra.setdefault("epoch_origin", origin)
        return trace
    return with_samples(trace, history.system, origin, *step_log_times(history.frame))


def epoch_origin(history: History) -> float:
    """The epoch seconds of the trace's zero: the run's start where the tracker recorded it, else its first row's or
    first system sample's wall time (NaN when it recorded no time at all)."""
    if np.isfinite(history.started):
        return float(history.started)
    logged = history.frame[WALL_TIME].to_numpy(dtype=float) if WALL_TIME in history.frame else np.empty(0)
    times = np.concatenate([logged, history.system["wall_time"].to_numpy(dtype=float)])
    times = times[np.isfinite(times)]
    return float(times.min()) if len(times) else float("nan")


def step_log_times(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(steps, the wall time each was logged at): a step's row is logged when the step ends."""
    if WALL_TIME not in frame:
        return np.empty(0, dtype=np.int64), np.empty(0)
    timed = frame[[STEP, WALL_TIME]].dropna()
    logged = timed.groupby(STEP)[WALL_TIME].max()
    return logged.index.to_numpy(dtype=np.int64), logged.to_numpy(dtype=float)


def _relations_applied(frame: pd.DataFrame, entries: list[KeyEntry]) -> pd.DataFrame:
    """The frame with the key map's `within` relations applied: timers after the step's timer added to the step
    (a step runs from the end of the previous one to the end of this one); a timer nested in another with a canonical
    key of its own carved out of that one. A missing value counts as 0."""
    timers = [e for e in entries if e.role == "component" and not e.is_pattern and e.native in frame]
    after = [e.native for e in timers if e.within == "after_step"]
    if after:
        extra = frame[after].fillna(0.0).sum(axis=1)
        frame = frame.assign(
            **{e.native: frame[e.native] + extra for e in entries if e.role == "step" and e.native in frame}
        )
    carved: dict[str, pd.Series] = {}
    for e in timers:
        if e.canonical and e.within not in WITHIN and e.within in frame:
            carved[e.within] = carved.get(e.within, 0.0) + frame[e.native].fillna(0.0)
    return frame.assign(**{key: frame[key] - nested for key, nested in carved.items()}) if carved else frame


def _map(key: str, entries: list[KeyEntry], framework: str) -> tuple[KeyEntry | None, str]:
    """(the entry that maps `key`, its canonical key); (None, native.<framework>.<key>) when none does."""
    for entry in entries:
        if not entry.canonical:
            continue
        if not entry.is_pattern:
            if key == entry.native:
                return entry, entry.canonical
            continue
        if entry.matches(key):
            return entry, entry.canonical_for(key)
    return None, f"native.{framework}.{key}"
