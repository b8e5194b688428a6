"""verl metric records -> per-step agg rows: trainer.step, its five components, counters, verl's own figures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
from benchbed.adapters.verl.keymap import ModeMap
from benchbed.adapters.verl.records import Record

from benchbed import keys as K
from benchbed.adapterkit.breakdown import StepBreakdown
from benchbed.adapterkit.rows import AggRows
from benchbed.trace import TraceBuilder, attrs_json

_NAMED = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)
# what to do with a key: (kind, target); kinds: step, inside, outside, framework, native, ignore
Action = tuple[str, str]


@dataclass
class Segment:
    """A stretch of records with rising steps; a resumed run starts a new one at a lower step."""

    index: int
    records: list[Record] = field(default_factory=list)


@dataclass
class StepSummary:
    steps: int = 0
    segments: int = 0
    last_step: int = -1
    timing_keys: set[str] = field(default_factory=set)
    breakdown: StepBreakdown = field(default_factory=StepBreakdown)
    negative: dict[int, list[str]] = field(default_factory=dict)  # step -> timers with a negative duration
    null_step: list[int] = field(default_factory=list)  # steps whose step timer is null or not a number
    gaps: list[tuple[int, int]] = field(default_factory=list)  # (first, last) missing step of each gap
    summed: bool = False  # trainer.step is the sum of the phase timers (no step timer in this release)
    local_steps: dict[int, int] = field(default_factory=dict)


def segments_of(records: list[Record], warnings: list[str]) -> list[Segment]:
    """Merge log calls that share a step (disjoint keys) and cut a new segment where the step goes back."""
    segments = [Segment(0)]
    current: Record | None = None
    repeats = 0
    for rec in records:
        if current is not None and rec.step == current.step and current.data.keys().isdisjoint(rec.data.keys()):
            current.data = {**current.data, **rec.data}
            continue
        if current is not None and rec.step == current.step and rec.data.items() <= current.data.items():
            repeats += 1  # the same line twice (a log captured by two handlers, or pasted twice)
            continue
        if current is not None and rec.step <= current.step:
            warnings.append(
                f"{rec.source}:{rec.line}: step {rec.step} follows step {current.step}: the run was resumed "
                f"(segment {len(segments)} starts here); both segments are kept, so steps {rec.step}.."
                f"{current.step} appear twice"
            )
            segments.append(Segment(len(segments)))
        current = Record(rec.step, rec.data, rec.source, rec.line)
        segments[-1].records.append(current)
    if repeats:
        warnings.append(f"{records[0].source}: {repeats} repeated record(s) (same step, same values) read once")
    return [s for s in segments if s.records]


def _classifier(mm: ModeMap) -> Callable[[str], Action]:
    cache = mm.actions
    prefix = mm.timing_prefix
    step_key = prefix + mm.step_timer if mm.step_timer else None

    def classify(key: str) -> Action:
        action = cache.get(key)
        if action is not None:
            return action
        if key in mm.framework:
            action = ("framework", mm.framework[key])
        elif (quality := mm.quality_key(key)) is not None:
            action = ("framework", quality)
        elif key == step_key:
            action = ("step", K.TRAINER_STEP)
        elif key.startswith(prefix) and not key.startswith(prefix + "agent_loop/"):
            name = key[len(prefix) :]
            if name in mm.not_trainer:
                action = ("native", "native." + key) if mm.native(key) else ("ignore", "")
            elif name in mm.after_step:
                action = ("outside", mm.after_step[name])
            elif name in mm.components:
                action = ("inside", mm.components[name])
            else:
                action = ("timer", "")  # inside the step, not named: part of trainer.other
        elif mm.native(key):
            action = ("native", "native." + key)
        else:
            action = ("ignore", "")
        cache[key] = action
        return action

    return classify


def _plan(data: dict[str, Any], classify: Callable[[str], Action]) -> list[tuple[str, str, str]]:
    """The keys of a record that matter, with what to do with each (records of a run share their key set)."""
    out = []
    for key in data:
        kind, target = classify(key)
        if kind != "ignore":
            out.append((key, kind, target))
    return out


def emit_steps(
    segments: list[Segment],
    mm: ModeMap,
    builder: TraceBuilder,
    samples_for: Callable[[int, int], float | None],
) -> StepSummary:
    """Agg rows per record. `samples_for(step, local_steps)` gives samples trained in a step, if known.

    fully_async records are parameter-sync cycles (`step` = parameter version, timers summed over the cycle's
    local steps); they stay one benchbed step each, so versions and steps agree (v_train = step - 1).
    Records that share a key set are read as one table, column by column (these are most of the work)."""
    summary = StepSummary(segments=len(segments))
    classify = _classifier(mm)
    plans: dict[tuple[str, ...], list[tuple[str, str, str]]] = {}
    rows = AggRows()
    offset = 1 - mm.first_step
    for segment in segments:
        attrs = attrs_json({"segment": segment.index}) if segment.index else ""
        for before, after in zip(segment.records, segment.records[1:], strict=False):
            if after.step > before.step + 1:
                summary.gaps.append((before.step + 1 + offset, after.step - 1 + offset))
        by_plan: dict[tuple[str, ...], list[int]] = {}
        for i, rec in enumerate(segment.records):
            signature = tuple(rec.data)
            if signature not in plans:
                plans[signature] = _plan(rec.data, classify)
                summary.timing_keys.update(key for key, kind, _ in plans[signature] if kind in _TIMING_KINDS)
            by_plan.setdefault(signature, []).append(i)
        timers = _Timers(len(segment.records))
        for signature, positions in by_plan.items():
            records = [segment.records[i] for i in positions]
            plan = plans[signature]
            timers.read(positions, records, [entry for entry in plan if entry[1] in _TIMING_KINDS], mm.step_timer)
            _emit_figures(records, [entry for entry in plan if entry[1] not in _TIMING_KINDS], rows, attrs, offset)
        _emit_timing(segment, timers, mm, rows, samples_for, summary, attrs)
    rows.flush(builder)
    return summary


_TIMING_KINDS = ("inside", "outside", "step", "timer")


def _table(records: list[Record], keys: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of `keys` in records that all hold them, as a (records x keys) float array with NaN where a value is
    not a number (null, text, a bool), and the mask of those non-numbers (None when every value is a number)."""
    n, m = len(records), len(keys)
    get = itemgetter(*keys)
    flat: list[Any] = (
        list(chain.from_iterable(get(rec.data) for rec in records)) if m > 1 else [get(rec.data) for rec in records]
    )
    if set(map(type, flat)) <= _NUMBER_TYPES:
        return np.array(flat, dtype=np.float64).reshape(n, m), None
    number = np.fromiter(((v.__class__ is float or v.__class__ is int) for v in flat), bool, n * m)
    values = np.array([v if ok else math.nan for v, ok in zip(flat, number, strict=True)], dtype=np.float64)
    return values.reshape(n, m), ~number.reshape(n, m)


_NUMBER_TYPES = {float, int}


def _emit_figures(
    records: list[Record], plan: list[tuple[str, str, str]], rows: AggRows, attrs: str, offset: int
) -> None:
    """verl's own and native figures of records that share a key set: one block of rows per key, NaN and
    non-numbers left out."""
    if not plan or not records:
        return
    steps = np.fromiter((rec.step for rec in records), np.int64, len(records)) + offset
    values, _ = _table(records, [key for key, _, _ in plan])
    counted = steps >= 1  # verl's validation before training is logged at step 0: the trace counts steps from 1
    for j, (_, _, target) in enumerate(plan):
        column = values[:, j]
        ok = ~np.isnan(column) & counted
        if ok.all():
            rows.extend(target, steps, column, "", attrs)
        else:
            rows.extend(target, steps[ok], column[ok], "", attrs)


class _Timers:
    """Per record of a segment: step timer, named components, time outside the step, all phases, whether any
    timer was read, and the timers that were negative or not numbers (filled key set by key set)."""

    def __init__(self, n: int) -> None:
        self.step_time = np.full(n, math.nan)
        self.named = {key: np.zeros(n) for key in _NAMED}
        self.outside = np.zeros(n)
        self.phases = np.zeros(n)
        self.timed = np.zeros(n, dtype=bool)
        self.negative: dict[int, list[str]] = {}
        self.null_step = np.zeros(n, dtype=bool)

    def read(self, positions: list[int], records: list[Record], plan: list[tuple[str, str, str]], step_timer: str
             ) -> None:  # fmt: skip
        if not plan:
            return
        at = np.asarray(positions)
        values, not_number = _table(records, [key for key, _, _ in plan])
        with np.errstate(invalid="ignore"):
            below_zero = values < 0
        for j in np.flatnonzero(below_zero.any(axis=0)):
            for i in np.flatnonzero(below_zero[:, j]):
                self.negative.setdefault(int(at[i]), []).append(plan[j][0])
        read = ~np.isnan(values) & ~below_zero
        counted = np.where(read, values, 0.0)
        for j, (_, kind, target) in enumerate(plan):
            if kind == "step":
                self.step_time[at] = np.where(read[:, j], values[:, j], math.nan)
                if not_number is not None:
                    self.null_step[at] |= not_number[:, j]
                continue
            if kind == "inside":
                self.named[target][at] += counted[:, j]
                self.phases[at] += counted[:, j]
            elif kind == "outside":
                self.outside[at] += counted[:, j]
                if target != K.TRAINER_OTHER:
                    self.named[target][at] += counted[:, j]
            else:
                self.phases[at] += counted[:, j]
            self.timed[at] |= read[:, j]


def _local_steps(segment: Segment, kept: np.ndarray) -> np.ndarray:
    """fully_async: how many local trainer steps each sync-cycle record covers (from training/global_step); records
    not kept (negative timers) are passed over."""
    local = np.ones(len(segment.records), dtype=np.int64)
    prev_global = None
    for i in np.flatnonzero(kept):
        global_step = segment.records[i].data.get("training/global_step")
        if isinstance(global_step, (int, float)) and prev_global is not None:
            local[i] = max(1, int(global_step) - prev_global)
        elif isinstance(global_step, (int, float)) and segment.index == 0:
            local[i] = max(1, int(global_step))
        if isinstance(global_step, (int, float)):
            prev_global = int(global_step)
    return local


def _emit_timing(
    segment: Segment,
    timers: _Timers,
    mm: ModeMap,
    rows: AggRows,
    samples_for: Callable[[int, int], float | None],
    summary: StepSummary,
    attrs: str,
) -> None:
    """trainer.step and its five components per record, and samples trained. A record with a negative timer keeps
    none of its times (a duration below zero is impossible: none of them can be trusted)."""
    records = segment.records
    steps = np.fromiter((rec.step for rec in records), np.int64, len(records)) + (1 - mm.first_step)
    summary.null_step.extend(int(s) for s in steps[timers.null_step])
    kept = np.ones(len(records), dtype=bool)
    for i, keys in sorted(timers.negative.items()):
        summary.negative[int(steps[i])] = keys
        kept[i] = False
    step_time = timers.step_time
    if not mm.step_timer:
        summed = np.isnan(step_time) & timers.timed & kept
        if summed.any():
            step_time = np.where(summed, timers.phases, step_time)
            summary.summed = True
    local = _local_steps(segment, kept) if mm.record == "sync_cycle" else None
    if local is not None:
        summary.local_steps.update(zip(steps[kept].tolist(), local[kept].tolist(), strict=True))
    untimed_step = np.isnan(step_time)
    partly = untimed_step & timers.timed & kept  # phases timed, but no step to put them in: kept as they are
    for key, values in timers.named.items():
        show = partly & (values != 0)
        rows.extend(key, steps[show], values[show], "trainer", attrs)
    whole = ~untimed_step & kept
    if not whole.any():
        return
    at = np.flatnonzero(whole)
    total = step_time[at] + timers.outside[at]
    rows.extend(K.TRAINER_STEP, steps[at], total, "trainer", attrs)
    where = [f"{records[i].source}:{records[i].line}" for i in at]
    parts = summary.breakdown.settle_many(steps[at], total, {k: v[at] for k, v in timers.named.items()}, where)
    for key, values in parts.items():
        rows.extend(key, steps[at], values, "trainer", attrs)
    locals_ = local[at].tolist() if local is not None else [1] * len(at)
    samples = [samples_for(step, n) for step, n in zip(steps[at].tolist(), locals_, strict=True)]
    known = np.array([s is not None for s in samples], dtype=bool)
    rows.extend(K.SAMPLES_TRAINED, steps[at][known], np.array([s for s in samples if s is not None], dtype=float),
                "", attrs)  # fmt: skip
    summary.steps += len(at)
    summary.last_step = int(steps[at[-1]])
