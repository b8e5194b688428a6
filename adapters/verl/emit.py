"""verl metric records -> per-step agg rows: trainer.step, its five components, counters, verl's own figures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from benchbed.adapters.verl.keymap import ModeMap

from benchbed.adapterkit.breakdown import StepBreakdown
from benchbed.adapterkit.rows import AggRows
from benchbed.adapterkit.step_columns import KeyTable, Places, StepColumns
from benchbed.api import TraceBuilder, attrs_json
from benchbed.api import keys as K

_NAMED = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)
# what to do with a key: (kind, target); kinds: step, inside, outside, framework, native, ignore
Action = tuple[str, str]


@dataclass
class Segment:
    """A stretch of records with rising steps; a resumed run starts a new one at a lower step."""

    index: int
    records: StepColumns
    rows: np.ndarray  # the segment's records (indices into `records`), in order

    def steps(self) -> np.ndarray:
        return self.records.array("steps", self.rows)


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


def segments_of(records: StepColumns, warnings: list[str]) -> list[Segment]:
    """Merge log calls that share a step (disjoint keys; the merged record is added to `records`) and cut a new
    segment where the step goes back."""
    segments: list[list[int]] = [[]]
    current = -1
    repeats = 0
    steps = records.steps
    for i in range(len(records)):
        step = steps[i]
        if current >= 0 and step == steps[current]:
            if set(records.keys(current)).isdisjoint(records.keys(i)):
                merged = {**records.data(current), **records.data(i)}
                current = records.add(step, merged, records.source(current), records.lines[current])
                segments[-1][-1] = current
                continue
            if records.data(i).items() <= records.data(current).items():
                repeats += 1  # the same line twice (a log captured by two handlers, or pasted twice)
                continue
        if current >= 0 and step <= steps[current]:
            warnings.append(
                f"{records.where(i)}: step {step} follows step {steps[current]}: the run was resumed "
                f"(segment {len(segments)} starts here); both segments are kept, so steps {step}.."
                f"{steps[current]} appear twice"
            )
            segments.append([])
        current = i
        segments[-1].append(i)
    if repeats:
        warnings.append(f"{records.source(0)}: {repeats} repeated record(s) (same step, same values) read once")
    return [Segment(index, records, np.array(rows, dtype=np.int64)) for index, rows in enumerate(segments) if rows]


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


def _plan(keys: tuple[str, ...], classify: Callable[[str], Action]) -> list[tuple[str, str, str]]:
    """The keys of a record that matter, with what to do with each (records of a run share their key set)."""
    out = []
    for key in keys:
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
        steps = segment.steps()
        for at in np.flatnonzero(steps[1:] > steps[:-1] + 1).tolist():
            summary.gaps.append((int(steps[at]) + 1 + offset, int(steps[at + 1]) - 1 + offset))
        columns = segment.records
        tables, table_rows = columns.array("table_of", segment.rows), columns.array("row_of", segment.rows)
        timers = _Timers(len(segment.rows))
        for t in _in_order_of_appearance(tables):
            table = columns.tables[t]
            if table.keys not in plans:
                plans[table.keys] = _plan(table.keys, classify)
                summary.timing_keys.update(key for key, kind, _ in plans[table.keys] if kind in _TIMING_KINDS)
            plan = plans[table.keys]
            positions = np.flatnonzero(tables == t)
            at_rows = table_rows[positions]
            timers.read(positions, table, at_rows, [entry for entry in plan if entry[1] in _TIMING_KINDS])
            figures = [entry for entry in plan if entry[1] not in _TIMING_KINDS]
            _emit_figures(steps[positions], table, at_rows, figures, rows, attrs, offset)
        _emit_timing(segment, timers, mm, rows, samples_for, summary, attrs)
    rows.flush(builder)
    return summary


_TIMING_KINDS = ("inside", "outside", "step", "timer")


def _in_order_of_appearance(codes: np.ndarray) -> list[int]:
    """The distinct values of `codes`, in the order each first appears."""
    distinct, first = np.unique(codes, return_index=True)
    return distinct[np.argsort(first)].tolist()


def _emit_figures(
    steps: np.ndarray, table: KeyTable, at_rows: np.ndarray, plan: list[tuple[str, str, str]], rows: AggRows,
    attrs: str, offset: int,
) -> None:  # fmt: skip
    """verl's own and native figures of records that share a key set: one block of rows per key, NaN and
    non-numbers left out."""
    if not plan or not len(steps):
        return
    steps = steps + offset
    values, _ = table.matrix(at_rows, [key for key, _, _ in plan])
    counted = steps >= 1  # verl's validation before training is logged at step 0: the trace counts steps from 1
    for j, (_, _, target) in enumerate(plan):
        rows.extend_numbers(target, steps, values[:, j], "", attrs, keep=counted)


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

    def read(self, at: np.ndarray, table: KeyTable, at_rows: np.ndarray, plan: list[tuple[str, str, str]]) -> None:
        """The timers of `plan` of the records at `at` (rows `at_rows` of `table`)."""
        if not plan:
            return
        values, not_number = table.matrix(at_rows, [key for key, _, _ in plan])
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
    local = np.ones(len(segment.rows), dtype=np.int64)
    prev_global = None
    for i in np.flatnonzero(kept):
        global_step = segment.records.get(int(segment.rows[i]), "training/global_step")
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
    steps = segment.steps() + (1 - mm.first_step)
    summary.null_step.extend(int(s) for s in steps[timers.null_step])
    kept = np.ones(len(steps), dtype=bool)
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
    where = Places(segment.records, segment.rows[at])
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
