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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from benchbed import keys as K
from benchbed.metrics.series import COMPONENTS, _pack_lanes, step_breakdown
from benchbed.outputs import open_output
from benchbed.trace import Trace

FORMATS = ("perfetto", "csv", "parquet")
TRAINER_PID, GENERATOR_PID, SANDBOX_PID = 1, 2, 3
PROCESSES = {TRAINER_PID: "trainer", GENERATOR_PID: "generator", SANDBOX_PID: "sandboxes"}
CHUNK = 100_000  # events formatted and written at a time
COUNTER_POINTS = 20_000  # counters with more changes than this are sampled on an even grid
MAX_SANDBOX_THREADS = 1024  # beyond this many sandboxes, sandboxes share packed lanes
RECONSTRUCTED_THREAD = "trainer (reconstructed from per-step durations)"
US = 1e6
_UNSAFE = r'["\\\x00-\x1f]'
ProgressFn = Callable[[int], None]
_ROLLOUT_COLUMNS = ("actor", "t0", "t1", "step", "status", "v_train")  # read for every rollout at once
Part = pa.Array | str  # a column of JSON fragments, or one fragment repeated


@dataclass
class ExportSummary:
    """What an export wrote: events by phase, whether the timeline was reconstructed, rows left out."""

    path: Path
    events: dict[str, int] = field(default_factory=dict)
    reconstructed: bool = False
    skipped_untimed: int = 0


class _Writer:
    """Streams events into the traceEvents array as bytes straight from Arrow's buffers, counting them by phase.

    Every event is followed by ",\n"; `close` writes the metadata events last, the final one without a comma."""

    def __init__(self, fh: IO[bytes], summary: ExportSummary) -> None:
        self.fh, self.summary = fh, summary

    def write(self, phase: str, lines: pa.Array) -> None:
        if not len(lines):
            return
        text = pc.binary_join_element_wise(lines, pa.scalar(",\n"), "")
        wide = pa.types.is_large_string(text.type)
        offsets = np.frombuffer(text.buffers()[1], dtype=np.int64 if wide else np.int32)
        first, last = offsets[text.offset], offsets[text.offset + len(text)]
        self.fh.write(memoryview(text.buffers()[2])[first:last])
        self.summary.events[phase] = self.summary.events.get(phase, 0) + len(text)

    def close(self, lines: list[str]) -> None:
        self.fh.write(",\n".join(lines).encode())
        self.summary.events["M"] = len(lines)


def _us(seconds: np.ndarray) -> np.ndarray:
    return np.rint(seconds * US).astype(np.int64)


def _num(values: np.ndarray) -> pa.Array:
    """Numbers as JSON text (non-finite floats as null), formatted in Arrow's C++ kernels."""
    text = pc.cast(pa.array(values), pa.string())
    if values.dtype.kind == "f":
        text = pc.if_else(pa.array(np.isfinite(values)), text, pa.scalar("null"))
    return text


def _quoted(values: pd.Series) -> pa.Array:
    """Strings as JSON string literals; escaped one by one only when some need it."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        literals = pa.array([json.dumps(str(c)) for c in values.cat.categories], pa.string())
        return literals.take(pa.array(values.cat.codes.to_numpy()))
    text = pa.array(values.astype(str).to_numpy(dtype=object), pa.string())
    if pc.any(pc.match_substring_regex(text, _UNSAFE)).as_py():
        return pa.array([json.dumps(v) for v in text.to_pylist()], pa.string())
    return _join('"', text, '"')


def _join(*parts: Part) -> pa.Array:
    """Element-wise concatenation of columns and repeated fragments into one JSON text per event."""
    return pc.binary_join_element_wise(*(pa.scalar(p) if isinstance(p, str) else p for p in parts), "")


class _Threads:
    """Integer thread ids per process, with their names (for "M" metadata events)."""

    def __init__(self) -> None:
        self.names: dict[tuple[int, str], int] = {}

    def tid(self, pid: int, name: str) -> int:
        return self.names.setdefault((pid, name), len(self.names) + 1)

    def tids(self, pid: int, names: pd.Series | np.ndarray) -> np.ndarray:
        """Thread ids for thread names, new names numbered in natural order (slot/2 before slot/10)."""
        codes, unique = pd.factorize(pd.Series(names).astype(str) if not isinstance(names, pd.Series) else names)
        unique = [str(u) for u in unique]
        ids = {name: self.tid(pid, name) for name in sorted(unique, key=_natural)}
        return np.array([ids[name] for name in unique], dtype=np.int64)[codes]


def _natural(name: str) -> tuple[str, int, str]:
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2)), name) if match else (name, -1, name)


def _span_positions(events: pd.DataFrame, key: str) -> np.ndarray:
    """Positions of the timed spans with this key."""
    timed = np.isfinite(events["t0"].to_numpy()) & np.isfinite(events["t1"].to_numpy())
    return np.flatnonzero((events["key"] == key).to_numpy() & (events["kind"] == "span").to_numpy() & timed)


def _spans(events: pd.DataFrame, key: str) -> pd.DataFrame:
    return events.iloc[_span_positions(events, key)]


def _x_events(pid: int, tid: np.ndarray, name: Part, t0: np.ndarray, t1: np.ndarray, args: Part = "{}") -> pa.Array:
    """Complete ("X") events: ts and dur in whole microseconds, each end rounded as its start (nesting kept)."""
    ts = _us(t0)
    dur = np.maximum(_us(t1) - ts, 0)
    return _join('{"ph":"X","name":', name, f',"pid":{pid},"tid":', _num(tid), ',"ts":', _num(ts), ',"dur":',
                 _num(dur), ',"args":', args, "}")  # fmt: skip


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
            tid = threads.tids(TRAINER_PID, rows["actor"].astype(str).replace("", "trainer").to_numpy())
            step_tid = step_tid or int(tid[0])
            steps = rows["step"].to_numpy()
            name = _join('"step ', _num(steps), '"') if key == K.TRAINER_STEP else f'"{key.removeprefix("trainer.")}"'
            args = _join('{"step":', _num(steps), "}")
            writer.write("X", _x_events(TRAINER_PID, tid, name, rows["t0"].to_numpy(), rows["t1"].to_numpy(), args))
        start = dict(zip(step_spans["step"].tolist(), step_spans["t0"].tolist(), strict=True))
        end = dict(zip(step_spans["step"].tolist(), step_spans["t1"].tolist(), strict=True))
        compute = _spans(events, K.TRAINER_COMPUTE)
        consume = {**start, **dict(zip(compute["step"].tolist(), compute["t0"].tolist(), strict=True))}
        return _Steps(start, consume, end, step_tid)
    frame = step_breakdown(trace).frame
    if not len(frame):
        return _Steps({}, {}, {})
    summary.reconstructed = True
    tid = np.full(len(frame), threads.tid(TRAINER_PID, RECONSTRUCTED_THREAD))
    ends = np.cumsum(frame["step_s"].to_numpy(dtype=float))
    starts = ends - frame["step_s"].to_numpy(dtype=float)
    steps = frame["step"].to_numpy()
    args = _join('{"step":', _num(steps), ',"reconstructed":true}')
    writer.write("X", _x_events(TRAINER_PID, tid, _join('"step ', _num(steps), '"'), starts, ends, args))
    cursor = starts.copy()
    consume = starts.copy()
    for component in COMPONENTS:
        seconds = frame[component].to_numpy(dtype=float)
        has = seconds > 0
        if component == "compute":
            consume = np.where(has, cursor, consume)
        kept = args.filter(pa.array(has))
        writer.write("X", _x_events(TRAINER_PID, tid[has], f'"{component}"', cursor[has], (cursor + seconds)[has],
                                    kept))  # fmt: skip
        cursor = cursor + seconds
    as_dict = lambda values: dict(zip(steps.tolist(), values.tolist(), strict=True))  # noqa: E731
    return _Steps(as_dict(starts), as_dict(consume), as_dict(ends), int(tid[0]))


def _rollout_lanes(rows: pd.DataFrame) -> pd.Series | np.ndarray:
    """A generator slot per rollout: its actor when actors are slots (never overlap), else packed lanes."""
    actor = rows["actor"]
    codes, unique = pd.factorize(actor)
    t0, t1 = rows["t0"].to_numpy(dtype=float), rows["t1"].to_numpy(dtype=float)
    if len(codes) and "" not in {str(u) for u in unique}:
        order = np.lexsort((t0, codes))
        c, s, e = codes[order], t0[order], t1[order]
        if not ((c[1:] == c[:-1]) & (s[1:] < e[:-1])).any():
            return actor
    return np.char.add("lane/", _pack_lanes(t0, t1).astype(str))


def _rollouts(trace: Trace, writer: _Writer, threads: _Threads, steps: _Steps,
              progress: ProgressFn | None) -> pd.DataFrame:  # fmt: skip
    """Rollout slices on generator slots and flow events to the consuming step; returns the timed rollouts' times,
    statuses and consuming steps. Only the columns read for every rollout at once are copied; the string ids are
    taken a chunk at a time (a copy of every rollout row was most of the export's memory)."""
    events = trace.events
    positions = _span_positions(events, K.ROLLOUT)
    rows = events[list(_ROLLOUT_COLUMNS)].iloc[positions]
    if not len(rows):
        return rows
    tid = threads.tids(GENERATOR_PID, _rollout_lanes(rows))
    v_train, step = rows["v_train"].to_numpy(), rows["step"].to_numpy()
    t0, t1 = rows["t0"].to_numpy(dtype=float), rows["t1"].to_numpy(dtype=float)
    v_starts, v_ends, rewards = (events[c].to_numpy() for c in ("v_start", "v_end", "value"))  # views, no copy
    for start in range(0, len(rows), CHUNK):
        part = slice(start, min(len(rows), start + CHUNK))
        at = positions[part]
        v_start = v_starts[at]
        staleness = np.where((v_start >= 0) & (v_train[part] >= 0), v_train[part] - v_start, -1)
        status = _quoted(rows["status"].iloc[part])
        sample, group = (_quoted(events[column].iloc[at]) for column in ("sample", "group"))
        args = _join(
            '{"sample":', sample, ',"group":', group, ',"step":', _num(step[part]),
            ',"v_start":', _num(v_start), ',"v_end":', _num(v_ends[at]), ',"v_train":', _num(v_train[part]),
            ',"status":', status, ',"reward":', _num(rewards[at].astype(float)), ',"staleness":', _num(staleness), "}",
        )  # fmt: skip
        name = _join('"rollout ', pc.utf8_slice_codeunits(status, 1), "")
        writer.write("X", _x_events(GENERATOR_PID, tid[part], name, t0[part], t1[part], args))
        if progress is not None:
            progress(part.stop - part.start)
    consume = pd.Series(step).map(steps.consume).to_numpy(dtype=float)
    status_ok = (rows["status"] == "ok").to_numpy()
    trained = np.flatnonzero(status_ok & (v_train >= 0) & np.isfinite(consume))
    flow_from = np.maximum(_us(t0[trained]), _us(t1[trained]) - 1)  # inside the rollout's slice
    flow_to = _us(consume[trained])
    for start in range(0, len(trained), CHUNK):
        part = slice(start, min(len(trained), start + CHUNK))
        ids = _num(trained[part])
        writer.write("flow", _join('{"ph":"s","name":"consumed by step","cat":"flow","id":', ids,
                                   f',"pid":{GENERATOR_PID},"tid":', _num(tid[trained[part]]), ',"ts":',
                                   _num(flow_from[part]), "}"))  # fmt: skip
        target = f',"pid":{TRAINER_PID},"tid":{steps.tid},"ts":'
        writer.write("flow", _join('{"ph":"f","bp":"e","name":"consumed by step","cat":"flow","id":', ids, target,
                                   _num(flow_to[part]), "}"))  # fmt: skip
    return rows.assign(consume=consume)


def _sandboxes(trace: Trace, writer: _Writer, threads: _Threads) -> None:
    """Sandbox queue/start/exec/stop slices, one thread per sandbox (packed lanes beyond MAX_SANDBOX_THREADS)."""
    keys = (K.SANDBOX_QUEUE, K.SANDBOX_START, K.SANDBOX_EXEC, K.SANDBOX_STOP)
    rows = pd.concat([_spans(trace.events, k) for k in keys])
    if not len(rows):
        return
    sample = rows["sample"].astype(str).to_numpy()
    entity = np.where(sample != "", sample, rows["actor"].astype(str).to_numpy())
    unique, inverse = np.unique(entity, return_inverse=True)
    if len(unique) > MAX_SANDBOX_THREADS:
        first = pd.Series(rows["t0"].to_numpy()).groupby(inverse).min().to_numpy()
        last = pd.Series(rows["t1"].to_numpy()).groupby(inverse).max().to_numpy()
        lanes = np.char.add("sandbox lane/", _pack_lanes(first, last).astype(str))[inverse]
    else:
        lanes = np.char.add("sandbox/", unique.astype(str))[inverse]
    tid = threads.tids(SANDBOX_PID, lanes)
    name = _quoted(rows["key"].astype(str).str.removeprefix("sandbox."))
    args = _join('{"sandbox":', _quoted(pd.Series(entity)), ',"status":', _quoted(rows["status"]), "}")
    writer.write("X", _x_events(SANDBOX_PID, tid, name, rows["t0"].to_numpy(), rows["t1"].to_numpy(), args))


def _generator_extras(trace: Trace, writer: _Writer, threads: _Threads) -> None:
    """Admission pauses as slices and finished groups as instant events on their own generator threads."""
    paused = _spans(trace.events, K.GENERATOR_PAUSED)
    if len(paused):
        tid = np.full(len(paused), threads.tid(GENERATOR_PID, "admission: paused (free slots held back)"))
        writer.write("X", _x_events(GENERATOR_PID, tid, '"paused"', paused["t0"].to_numpy(), paused["t1"].to_numpy()))
    groups = trace.events[(trace.events["key"] == K.ROLLOUT_GROUP).to_numpy()]
    groups = groups[np.isfinite(groups["t0"].to_numpy())]
    if len(groups):
        tid = threads.tid(GENERATOR_PID, "groups finished")
        ts, std = _us(groups["t0"].to_numpy()), groups["value"].to_numpy(dtype=float)
        writer.write("i", _join(
            f'{{"ph":"i","s":"t","name":"group","pid":{GENERATOR_PID},"tid":{tid},"ts":', _num(ts),
            ',"args":{"group":', _quoted(groups["group"]), ',"reward_std":', _num(std),
            ',"status":', _quoted(groups["status"]), ',"step":', _num(groups["step"].to_numpy()), "}}",
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
    writer.write("C", _join(f'{{"ph":"C","name":"{name}","pid":{pid},"ts":', _num(_us(t)),
                            f',"args":{{"{field_name}":', _num(np.rint(v).astype(np.int64)), "}}"))  # fmt: skip


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
    """Process and thread names and sort order, written last (the file's final events)."""
    used = sorted({pid for pid, _ in threads.names} | {TRAINER_PID})
    lines = []
    for pid in used:
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":"{PROCESSES[pid]}"}}}}')
        lines.append(f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}')
    for (pid, name), tid in threads.names.items():
        lines.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{json.dumps(name)}}}}}')
        lines.append(f'{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{tid},"args":{{"sort_index":{tid}}}}}')
    writer.close(lines)


def export_perfetto(trace: Trace, path: Path, progress: ProgressFn | None = None) -> ExportSummary:
    """Write `trace` as Chrome Trace Event JSON to `path` (atomically); `progress` gets rollouts written."""
    path = Path(path)
    summary = ExportSummary(path)
    threads = _Threads()
    with open_output(path) as fh:
        fh.write(b'{"traceEvents":[\n')
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
        fh.write(('\n],\n"displayTimeUnit":"ms",\n"otherData":' + json.dumps(other) + "}\n").encode())
    return summary


def export_table(trace: Trace, path: Path, fmt: str) -> Path:
    """The canonical trace itself as CSV (one row per event) or parquet (with its metadata)."""
    path = Path(path)
    if fmt == "parquet":
        return trace.write(path)
    if fmt != "csv":
        raise ValueError(f"unknown table format {fmt!r}; expected csv or parquet")
    with open_output(path) as fh:
        trace.events.to_csv(fh, index=False, chunksize=CHUNK, mode="wb")
    return path
