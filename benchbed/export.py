"""Export a canonical trace: Chrome Trace Event JSON for Perfetto / chrome://tracing, or the trace as CSV/parquet.

The JSON has one process per role (trainer, generator, sandboxes) and one thread per trainer, generator slot
(or packed lane) and sandbox; spans are "X" events in microseconds from run start, counters are "C" events, and
flow events join each trained rollout to the step that consumed it. It is written in chunks, so memory stays
bounded by the trace itself. A trace with only per-step aggregates gets a reconstructed step timeline (steps laid
end to end from their logged durations), and says so in its metadata.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.series import COMPONENTS, _overlaps_within, _pack_lanes, step_breakdown
from benchbed.trace import Trace

FORMATS = ("perfetto", "csv", "parquet")
TRAINER_PID, GENERATOR_PID, SANDBOX_PID = 1, 2, 3
PROCESSES = {TRAINER_PID: "trainer", GENERATOR_PID: "generator", SANDBOX_PID: "sandboxes"}
CHUNK = 50_000  # events formatted and written at a time
COUNTER_POINTS = 20_000  # counters with more changes than this are sampled on an even grid
MAX_SANDBOX_THREADS = 1024  # beyond this many sandboxes, sandboxes share packed lanes
US = 1e6
_UNSAFE = re.compile(r'["\\\x00-\x1f]')
ProgressFn = Callable[[int], None]


@dataclass
class ExportSummary:
    """What an export wrote: events by phase, whether the timeline was reconstructed, rows left out."""

    path: Path
    events: dict[str, int] = field(default_factory=dict)
    reconstructed: bool = False
    skipped_untimed: int = 0


class _Writer:
    """Streams events into the traceEvents array, counting them by phase."""

    def __init__(self, fh: IO[str], summary: ExportSummary) -> None:
        self.fh, self.summary, self.first = fh, summary, True

    def write(self, phase: str, lines: Iterable[str]) -> None:
        chunk = list(lines)
        if not chunk:
            return
        self.fh.write(("" if self.first else ",\n") + ",\n".join(chunk))
        self.first = False
        self.summary.events[phase] = self.summary.events.get(phase, 0) + len(chunk)


def _us(seconds: np.ndarray) -> np.ndarray:
    return np.rint(seconds * US).astype(np.int64)


def _json_strings(values: pd.Series) -> list[str]:
    """Each value as a JSON string literal (escaped only when needed: fast for millions of plain ids)."""
    text = values.astype(str)
    if text.str.contains(_UNSAFE).any():
        return [json.dumps(v) for v in text]
    return ('"' + text + '"').tolist()


class _Threads:
    """Integer thread ids per process, with their names (for "M" metadata events)."""

    def __init__(self) -> None:
        self.names: dict[tuple[int, str], int] = {}

    def tid(self, pid: int, name: str) -> int:
        return self.names.setdefault((pid, name), len(self.names) + 1)

    def tids(self, pid: int, names: np.ndarray) -> np.ndarray:
        """Thread ids for an array of thread names, new names numbered in natural order (slot/2 before slot/10)."""
        unique, inverse = np.unique(names.astype(str), return_inverse=True)
        ids = {name: self.tid(pid, name) for name in sorted(unique.tolist(), key=_natural)}
        return np.array([ids[name] for name in unique.tolist()], dtype=np.int64)[inverse]


def _natural(name: str) -> tuple[str, int, str]:
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2)), name) if match else (name, -1, name)


def _spans(events: pd.DataFrame, key: str) -> pd.DataFrame:
    rows = events[(events["key"] == key).to_numpy() & (events["kind"] == "span").to_numpy()]
    return rows[np.isfinite(rows["t0"].to_numpy()) & np.isfinite(rows["t1"].to_numpy())]


def _x_events(pid: int, tid: np.ndarray, names: list[str], t0: np.ndarray, t1: np.ndarray,
              args: list[str] | None = None) -> Iterator[str]:  # fmt: skip
    ts, end = _us(t0), _us(t1)
    dur = np.maximum(end - ts, 0)
    tail = args if args is not None else ["{}"] * len(ts)
    for name, thread, start, length, arg in zip(names, tid.tolist(), ts.tolist(), dur.tolist(), tail, strict=True):
        yield f'{{"ph":"X","name":{name},"pid":{pid},"tid":{thread},"ts":{start},"dur":{length},"args":{arg}}}'


def _write_chunks(writer: _Writer, phase: str, n: int, make: Callable[[slice], Iterator[str]],
                  progress: ProgressFn | None) -> None:  # fmt: skip
    for start in range(0, n, CHUNK):
        part = slice(start, min(n, start + CHUNK))
        writer.write(phase, make(part))
        if progress is not None:
            progress(part.stop - part.start)


@dataclass
class _Steps:
    """Trainer step timing (measured or reconstructed): step number -> (start, consume time, end) in seconds."""

    start: dict[int, float]
    consume: dict[int, float]
    end: dict[int, float]
    tid: int = 0


def _trainer(trace: Trace, writer: _Writer, threads: _Threads, summary: ExportSummary) -> _Steps:
    """Trainer slices: measured spans, or a timeline reconstructed from per-step aggregates."""
    events = trace.events
    step_spans = _spans(events, K.TRAINER_STEP)
    if len(step_spans):
        step_tid = 0
        for key in (K.TRAINER_STEP, *K.TRAINER_COMPONENTS):
            rows = _spans(events, key)
            if not len(rows):
                continue
            actor = rows["actor"].astype(str).replace("", "trainer").to_numpy()
            tid = threads.tids(TRAINER_PID, actor)
            step_tid = step_tid or int(tid[0])
            steps = rows["step"].to_numpy()
            label = key.removeprefix("trainer.")
            names = [f'"step {s}"' for s in steps] if key == K.TRAINER_STEP else [f'"{label}"'] * len(rows)
            args = [f'{{"step":{s}}}' for s in steps]
            writer.write("X", _x_events(TRAINER_PID, tid, names, rows["t0"].to_numpy(), rows["t1"].to_numpy(), args))
        start = dict(zip(step_spans["step"].tolist(), step_spans["t0"].tolist(), strict=True))
        end = dict(zip(step_spans["step"].tolist(), step_spans["t1"].tolist(), strict=True))
        compute = _spans(events, K.TRAINER_COMPUTE)
        consume = {**start, **dict(zip(compute["step"].tolist(), compute["t0"].tolist(), strict=True))}
        return _Steps(start, consume, end, step_tid)
    frame = step_breakdown(trace).frame
    if not len(frame):
        return _Steps({}, {}, {})
    summary.reconstructed = True
    tid = np.full(len(frame), threads.tid(TRAINER_PID, "trainer (reconstructed from per-step durations)"))
    ends = np.cumsum(frame["step_s"].to_numpy(dtype=float))
    starts = ends - frame["step_s"].to_numpy(dtype=float)
    steps = frame["step"].to_numpy()
    args = [f'{{"step":{s},"reconstructed":true}}' for s in steps]
    writer.write("X", _x_events(TRAINER_PID, tid, [f'"step {s}"' for s in steps], starts, ends, args))
    cursor = starts.copy()
    consume = starts.copy()
    for component in COMPONENTS:
        seconds = frame[component].to_numpy(dtype=float)
        has = seconds > 0
        if component == "compute":
            consume = np.where(has, cursor, consume)
        kept = [a for a, h in zip(args, has, strict=True) if h]
        names = [f'"{component}"'] * len(kept)
        writer.write("X", _x_events(TRAINER_PID, tid[has], names, cursor[has], (cursor + seconds)[has], kept))
        cursor = cursor + seconds
    as_dict = lambda values: dict(zip(steps.tolist(), values.tolist(), strict=True))  # noqa: E731
    return _Steps(as_dict(starts), as_dict(consume), as_dict(ends), int(tid[0]))


def _rollout_lanes(rows: pd.DataFrame) -> np.ndarray:
    """A generator slot per rollout: its actor when actors are slots (never overlap), else packed lanes."""
    actor = rows["actor"].astype(str).to_numpy()
    t0, t1 = rows["t0"].to_numpy(dtype=float), rows["t1"].to_numpy(dtype=float)
    if len(actor) and (actor != "").all() and not _overlaps_within(actor, t0, t1):
        return actor
    return np.char.add("lane/", _pack_lanes(t0, t1).astype(str))


def _rollouts(trace: Trace, writer: _Writer, threads: _Threads, steps: _Steps,
              progress: ProgressFn | None) -> pd.DataFrame:  # fmt: skip
    """Rollout slices on generator slots and flow events to the consuming step; returns the timed rollouts."""
    rows = _spans(trace.events, K.ROLLOUT)
    if not len(rows):
        return rows
    tid = threads.tids(GENERATOR_PID, _rollout_lanes(rows))
    status = rows["status"].astype(str)
    names = _json_strings("rollout " + status)
    v_start, v_end, v_train = (rows[c].to_numpy() for c in ("v_start", "v_end", "v_train"))
    staleness = np.where((v_start >= 0) & (v_train >= 0), v_train - v_start, -1)
    reward = rows["value"].to_numpy(dtype=float)
    reward_text = np.where(np.isfinite(reward), np.char.mod("%.6g", np.nan_to_num(reward)), "null")
    step = rows["step"].to_numpy()
    sample, group, status_json = _json_strings(rows["sample"]), _json_strings(rows["group"]), _json_strings(status)
    t0, t1 = rows["t0"].to_numpy(dtype=float), rows["t1"].to_numpy(dtype=float)

    def make(part: slice) -> Iterator[str]:
        args = [
            f'{{"sample":{a},"group":{g},"step":{s},"v_start":{vs},"v_end":{ve},"v_train":{vt},"status":{st},'
            f'"reward":{r},"staleness":{sl}}}'
            for a, g, s, vs, ve, vt, st, r, sl in zip(
                sample[part], group[part], step[part].tolist(), v_start[part].tolist(), v_end[part].tolist(),
                v_train[part].tolist(), status_json[part], reward_text[part].tolist(), staleness[part].tolist(),
                strict=True,
            )
        ]
        return _x_events(GENERATOR_PID, tid[part], names[part], t0[part], t1[part], args)

    _write_chunks(writer, "X", len(rows), make, progress)
    consume = pd.Series(step).map(steps.consume).to_numpy(dtype=float)
    trained = np.flatnonzero((status.to_numpy() == "ok") & (v_train >= 0) & np.isfinite(consume))
    start_us, end_us = _us(t0), _us(t1)
    flow_from = np.maximum(start_us, end_us - 1)  # inside the rollout's slice
    flow_to = np.zeros(len(consume), dtype=np.int64)
    flow_to[trained] = _us(consume[trained])

    def flows(part: slice) -> Iterator[str]:
        for i in trained[part].tolist():
            yield (f'{{"ph":"s","name":"consumed by step","cat":"flow","id":{i},"pid":{GENERATOR_PID},'
                   f'"tid":{tid[i]},"ts":{flow_from[i]}}}')  # fmt: skip
            yield (f'{{"ph":"f","bp":"e","name":"consumed by step","cat":"flow","id":{i},"pid":{TRAINER_PID},'
                   f'"tid":{steps.tid},"ts":{flow_to[i]}}}')  # fmt: skip

    _write_chunks(writer, "flow", len(trained), flows, None)
    return rows.assign(consume=consume)


def _sandboxes(trace: Trace, writer: _Writer, threads: _Threads) -> None:
    """Sandbox queue/start/exec/stop slices, one thread per sandbox (packed lanes beyond MAX_SANDBOX_THREADS)."""
    keys = (K.SANDBOX_QUEUE, K.SANDBOX_START, K.SANDBOX_EXEC, K.SANDBOX_STOP)
    rows = pd.concat([_spans(trace.events, k) for k in keys])
    if not len(rows):
        return
    entity = np.where(rows["sample"].astype(str) != "", rows["sample"].astype(str), rows["actor"].astype(str))
    unique, inverse = np.unique(entity, return_inverse=True)
    if len(unique) > MAX_SANDBOX_THREADS:
        first = pd.Series(rows["t0"].to_numpy()).groupby(inverse).min().to_numpy()
        last = pd.Series(rows["t1"].to_numpy()).groupby(inverse).max().to_numpy()
        lanes = np.char.add("sandbox lane/", _pack_lanes(first, last).astype(str))[inverse]
    else:
        lanes = np.char.add("sandbox/", unique.astype(str))[inverse]
    tid = threads.tids(SANDBOX_PID, lanes)
    names = _json_strings(rows["key"].astype(str).str.removeprefix("sandbox."))
    status = _json_strings(rows["status"])
    args = [f'{{"sandbox":{e},"status":{s}}}' for e, s in zip(_json_strings(pd.Series(entity)), status, strict=True)]
    writer.write("X", _x_events(SANDBOX_PID, tid, names, rows["t0"].to_numpy(), rows["t1"].to_numpy(), args))


def _generator_extras(trace: Trace, writer: _Writer, threads: _Threads) -> None:
    """Admission pauses as slices and finished groups as instant events on their own generator threads."""
    paused = _spans(trace.events, K.GENERATOR_PAUSED)
    if len(paused):
        tid = np.full(len(paused), threads.tid(GENERATOR_PID, "admission: paused (free slots held back)"))
        writer.write("X", _x_events(GENERATOR_PID, tid, ['"paused"'] * len(paused), paused["t0"].to_numpy(),
                                    paused["t1"].to_numpy()))  # fmt: skip
    groups = trace.events[(trace.events["key"] == K.ROLLOUT_GROUP).to_numpy()]
    groups = groups[np.isfinite(groups["t0"].to_numpy())]
    if len(groups):
        tid = threads.tid(GENERATOR_PID, "groups finished")
        std = groups["value"].to_numpy(dtype=float)
        std_text = np.where(np.isfinite(std), np.char.mod("%.6g", np.nan_to_num(std)), "null")
        writer.write("i", (
            f'{{"ph":"i","s":"t","name":"group","pid":{GENERATOR_PID},"tid":{tid},"ts":{ts},'
            f'"args":{{"group":{g},"reward_std":{s},"status":{st},"step":{step}}}}}'
            for ts, g, s, st, step in zip(_us(groups["t0"].to_numpy()).tolist(), _json_strings(groups["group"]),
                                          std_text.tolist(), _json_strings(groups["status"]),
                                          groups["step"].tolist(), strict=True)
        ))  # fmt: skip


def counter_series(
    times: np.ndarray, deltas: np.ndarray, points: int = COUNTER_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """A counter's value after each change (changes at equal times merged); sampled on an even grid when there
    are more than `points` changes."""
    if not len(times):
        return np.empty(0), np.empty(0)
    order = np.argsort(times, kind="stable")
    t, d = times[order], deltas[order]
    unique, first = np.unique(t, return_index=True)
    values = np.cumsum(d)[np.append(first[1:] - 1, len(t) - 1)]
    if len(unique) <= points:
        return unique, values
    grid = np.linspace(unique[0], unique[-1], points)
    return grid, values[np.searchsorted(unique, grid, side="right") - 1]


def _counter(writer: _Writer, pid: int, name: str, field_name: str, times: np.ndarray, deltas: np.ndarray) -> None:
    t, v = counter_series(times, deltas)
    writer.write("C", (f'{{"ph":"C","name":"{name}","pid":{pid},"ts":{ts},"args":{{"{field_name}":{int(x)}}}}}'
                       for ts, x in zip(_us(t).tolist(), v.tolist(), strict=True)))  # fmt: skip


def _counters(trace: Trace, writer: _Writer, rollouts: pd.DataFrame, steps: _Steps) -> None:
    if len(rollouts):
        t0, t1 = rollouts["t0"].to_numpy(dtype=float), rollouts["t1"].to_numpy(dtype=float)
        n = len(t0)
        _counter(writer, GENERATOR_PID, "samples in flight", "samples", np.concatenate([t0, t1]),
                 np.concatenate([np.ones(n), -np.ones(n)]))  # fmt: skip
        ok = (rollouts["status"].astype(str) == "ok").to_numpy()
        leave = rollouts["consume"].to_numpy(dtype=float)
        queued_t1 = t1[ok]
        leaves = np.maximum(leave[ok], queued_t1)
        consumed = np.isfinite(leaves)
        _counter(writer, GENERATOR_PID, "queue depth (finished, not yet trained)", "samples",
                 np.concatenate([queued_t1, leaves[consumed]]),
                 np.concatenate([np.ones(len(queued_t1)), -np.ones(int(consumed.sum()))]))  # fmt: skip
    if steps.end:
        ends = np.array(sorted(steps.end.values()))
        _counter(writer, TRAINER_PID, "trainer version", "version", np.concatenate([[0.0], ends]),
                 np.concatenate([[0.0], np.ones(len(ends))]))  # fmt: skip
    starts = _spans(trace.events, K.SANDBOX_START)
    if len(starts):
        n = len(starts)
        _counter(writer, SANDBOX_PID, "sandboxes starting", "sandboxes",
                 np.concatenate([starts["t0"].to_numpy(), starts["t1"].to_numpy()]),
                 np.concatenate([np.ones(n), -np.ones(n)]))  # fmt: skip


def _metadata(writer: _Writer, threads: _Threads) -> None:
    used = sorted({pid for pid, _ in threads.names} | {TRAINER_PID})
    lines = []
    for pid in used:
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":"{PROCESSES[pid]}"}}}}')
        lines.append(f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}')
    for (pid, name), tid in threads.names.items():
        lines.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{json.dumps(name)}}}}}')
        lines.append(f'{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{tid},"args":{{"sort_index":{tid}}}}}')
    writer.write("M", lines)


def export_perfetto(trace: Trace, path: Path, progress: ProgressFn | None = None) -> ExportSummary:
    """Write `trace` as Chrome Trace Event JSON to `path` (atomically); `progress` gets rollouts written."""
    path = Path(path)
    summary = ExportSummary(path)
    threads = _Threads()
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write('{"traceEvents":[\n')
        writer = _Writer(fh, summary)
        steps = _trainer(trace, writer, threads, summary)
        rollouts = _rollouts(trace, writer, threads, steps, progress)
        _generator_extras(trace, writer, threads)
        _sandboxes(trace, writer, threads)
        _counters(trace, writer, rollouts, steps)
        _metadata(writer, threads)
        timed = trace.events["kind"].isin(["span", "point"]).to_numpy()
        summary.skipped_untimed = int((timed & ~np.isfinite(trace.events["t0"].to_numpy())).sum())
        meta = trace.meta
        other = {
            "generator": "benchbed", "adapter": meta.adapter, "framework": meta.framework,
            "framework_version": meta.framework_version, "mode": meta.mode, "time_origin": "run start",
            "reconstructed": summary.reconstructed,
            "note": (
                "trainer steps reconstructed from per-step durations (the framework logged no timestamps): steps "
                "are laid end to end from time 0 and components in the order wait, compute, weight_sync, "
                "checkpoint, other" if summary.reconstructed else "timestamps as recorded in the trace"
            ),
            "untimed_rows_left_out": summary.skipped_untimed, "counter_points_max": COUNTER_POINTS,
        }  # fmt: skip
        fh.write('\n],\n"displayTimeUnit":"ms",\n"otherData":' + json.dumps(other) + "}\n")
    tmp.replace(path)
    return summary


def export_table(trace: Trace, path: Path, fmt: str) -> Path:
    """The canonical trace itself as CSV (one row per event) or parquet (with its metadata)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    if fmt == "parquet":
        trace.write(tmp)
    elif fmt == "csv":
        trace.events.to_csv(tmp, index=False, chunksize=CHUNK)
    else:
        raise ValueError(f"unknown table format {fmt!r}; expected csv or parquet")
    tmp.replace(path)
    return path
