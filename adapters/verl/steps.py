"""verl metric records -> per-step agg rows: trainer.step, its five components, counters, verl's own figures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    cache: dict[str, Action] = {}
    prefix = mm.timing_prefix
    step_key = prefix + mm.step_timer if mm.step_timer else None

    def classify(key: str) -> Action:
        action = cache.get(key)
        if action is not None:
            return action
        if key in mm.framework:
            action = ("framework", mm.framework[key])
        elif key == step_key:
            action = ("step", K.TRAINER_STEP)
        elif key.startswith(prefix) and not key.startswith(prefix + "agent_loop/"):
            name = key[len(prefix) :]
            if name in mm.not_trainer:
                action = ("native", "native." + key) if mm.native(key) else ("ignore", "")
            elif name in mm.outside_step:
                action = ("outside", mm.outside_step[name])
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
    local steps); they stay one benchbed step each, so versions and steps agree (v_train = step - 1)."""
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
        by_plan: dict[tuple[str, ...], list[Record]] = {}
        for rec in segment.records:
            signature = tuple(rec.data)
            if signature not in plans:
                plans[signature] = _plan(rec.data, classify)
                summary.timing_keys.update(key for key, kind, _ in plans[signature] if kind in _TIMING_KINDS)
            by_plan.setdefault(signature, []).append(rec)
        timing = {sig: [step for step in plans[sig] if step[1] in _TIMING_KINDS] for sig in by_plan}
        _emit_timing(segment, timing, mm, rows, samples_for, summary, attrs)
        for signature, records in by_plan.items():
            _emit_figures(records, plans[signature], rows, attrs, offset)
    rows.flush(builder)
    return summary


_TIMING_KINDS = ("inside", "outside", "step", "timer")


def _emit_figures(
    records: list[Record], plan: list[tuple[str, str, str]], rows: AggRows, attrs: str, offset: int
) -> None:
    """verl's own and native figures of records that share a key set, one key at a time (a comprehension per key
    rather than a call per row: these are most of the rows)."""
    steps = [rec.step + offset for rec in records]
    for key, kind, target in plan:
        if kind in _TIMING_KINDS:
            continue
        values = [rec.data[key] for rec in records]
        ok = [(v.__class__ is float and v == v) or v.__class__ is int for v in values]  # numbers, not NaN or bool
        if all(ok):
            rows.extend(target, steps, [float(v) for v in values], "", attrs)
        else:
            kept = [s for s, good in zip(steps, ok, strict=True) if good]
            rows.extend(target, kept, [float(v) for v, good in zip(values, ok, strict=True) if good], "", attrs)


def _emit_timing(
    segment: Segment,
    timing: dict[tuple[str, ...], list[tuple[str, str, str]]],
    mm: ModeMap,
    rows: AggRows,
    samples_for: Callable[[int, int], float | None],
    summary: StepSummary,
    attrs: str,
) -> None:
    """trainer.step and its five components per record, and samples trained (`timing`: the timer keys of each
    key set)."""
    agg = rows.add
    prev_global = None
    cycles = mm.record == "sync_cycle"
    for rec in segment.records:
        data = rec.data
        step = rec.step + 1 - mm.first_step
        step_time = math.nan
        named = dict.fromkeys(_NAMED, 0.0)
        outside = 0.0
        phases = 0.0  # every timer inside the step, named or not
        timed = False
        negative: list[str] = []
        for key, kind, target in timing[tuple(data)]:
            value = data[key]
            if value.__class__ is not float and value.__class__ is not int:
                if kind == "step":
                    summary.null_step.append(step)
                continue
            if value != value:  # NaN
                continue
            if value < 0:
                negative.append(key)
                continue
            if kind == "inside":
                named[target] += value
                phases += value
                timed = True
            elif kind == "step":
                step_time = float(value)
            elif kind == "outside":
                outside += value
                if target != K.TRAINER_OTHER:
                    named[target] += value
                timed = True
            else:
                phases += value
                timed = True
        if negative:  # a duration below zero is impossible: none of this step's times can be trusted
            summary.negative[step] = negative
            continue
        if math.isnan(step_time) and not mm.step_timer and timed:
            step_time = phases
            summary.summed = True
        local = 1
        if cycles:
            global_step = data.get("training/global_step")
            if isinstance(global_step, (int, float)) and prev_global is not None:
                local = max(1, int(global_step) - prev_global)
            elif isinstance(global_step, (int, float)) and segment.index == 0:
                local = max(1, int(global_step))
            if isinstance(global_step, (int, float)):
                prev_global = int(global_step)
            summary.local_steps[step] = local
        if math.isnan(step_time):
            if timed:
                for key, value in named.items():
                    if value:
                        agg(key, step, value, "trainer", attrs)
            continue
        total = step_time + outside
        agg(K.TRAINER_STEP, step, total, "trainer", attrs)
        for key, value in summary.breakdown.settle(step, total, named, f"{rec.source}:{rec.line}").items():
            agg(key, step, value, "trainer", attrs)
        samples = samples_for(step, local)
        if samples is not None:
            agg(K.SAMPLES_TRAINED, step, samples, "", attrs)
        summary.steps += 1
        summary.last_step = step
