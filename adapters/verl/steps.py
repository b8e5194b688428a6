"""verl metric records -> per-step agg rows: trainer.step, its five components, counters, verl's own figures."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from benchbed.adapters.verl.keymap import TIMING_PREFIX, ModeMap
from benchbed.adapters.verl.records import Record

from benchbed import keys as K
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
    clamped: list[int] = field(default_factory=list)
    local_steps: dict[int, int] = field(default_factory=dict)


def segments_of(records: list[Record], warnings: list[str]) -> list[Segment]:
    """Merge log calls that share a step (disjoint keys) and cut a new segment where the step goes back."""
    segments = [Segment(0)]
    current: Record | None = None
    for rec in records:
        if current is not None and rec.step == current.step and current.data.keys().isdisjoint(rec.data.keys()):
            current.data = {**current.data, **rec.data}
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
    return [s for s in segments if s.records]


def _classifier(mm: ModeMap) -> Callable[[str], Action]:
    cache: dict[str, Action] = {}
    step_key = TIMING_PREFIX + mm.step_timer

    def classify(key: str) -> Action:
        action = cache.get(key)
        if action is not None:
            return action
        if key in mm.framework:
            action = ("framework", "framework." + mm.framework[key])
        elif key == step_key:
            action = ("step", K.TRAINER_STEP)
        elif key.startswith(TIMING_PREFIX) and not key.startswith("timing_s/agent_loop/"):
            name = key[len(TIMING_PREFIX) :]
            if name in mm.not_trainer:
                action = ("native", "native." + key) if mm.native(key) else ("ignore", "")
            elif name in mm.outside_step:
                action = ("outside", mm.components.get(name, K.TRAINER_OTHER))
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
    cycles = mm.record == "sync_cycle"
    agg = builder.agg
    for segment in segments:
        attrs = attrs_json({"segment": segment.index}) if segment.index else ""
        prev_global = None
        for rec in segment.records:
            step_time = math.nan
            named = dict.fromkeys(_NAMED, 0.0)
            outside = 0.0
            timed = False
            for key, value in rec.data.items():
                if value is None or isinstance(value, (str, bool, list, dict)):
                    continue
                kind, target = classify(key)
                if kind == "ignore":
                    continue
                value = float(value)
                if value != value:  # NaN
                    continue
                if kind == "inside":
                    named[target] += value
                    timed = True
                elif kind == "step":
                    step_time = value
                elif kind == "outside":
                    outside += value
                    if target != K.TRAINER_OTHER:
                        named[target] += value
                    timed = True
                elif kind == "timer":
                    timed = True
                else:
                    agg(target, rec.step, value, attrs=attrs)
                if kind in ("inside", "outside", "step", "timer"):
                    summary.timing_keys.add(key)
            local = 1
            if cycles:
                global_step = rec.data.get("training/global_step")
                if isinstance(global_step, (int, float)) and prev_global is not None:
                    local = max(1, int(global_step) - prev_global)
                elif isinstance(global_step, (int, float)) and segment.index == 0:
                    local = max(1, int(global_step))
                if isinstance(global_step, (int, float)):
                    prev_global = int(global_step)
                summary.local_steps[rec.step] = local
            if math.isnan(step_time):
                if timed:
                    for key, value in named.items():
                        if value:
                            agg(key, rec.step, value, attrs=attrs)
                continue
            total = step_time + outside
            other = total - sum(named.values())
            if other < -1e-6:
                summary.clamped.append(rec.step)
            agg(K.TRAINER_STEP, rec.step, total, actor="trainer", attrs=attrs)
            for key, value in named.items():
                agg(key, rec.step, value, actor="trainer", attrs=attrs)
            agg(K.TRAINER_OTHER, rec.step, max(0.0, other), actor="trainer", attrs=attrs)
            samples = samples_for(rec.step, local)
            if samples is not None:
                agg(K.SAMPLES_TRAINED, rec.step, samples, attrs=attrs)
            summary.steps += 1
            summary.last_step = rec.step
    return summary
