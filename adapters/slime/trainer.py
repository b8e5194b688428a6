"""Trainer step decomposition from slime's per-step timer dict (the table in keymap), as agg rows or spans."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from benchbed.adapters.slime import keymap as M

from benchbed.adapterkit.breakdown import StepBreakdown
from benchbed.api import TraceBuilder
from benchbed.api import keys as K

_ORDER_BEFORE_WAIT = (K.TRAINER_CHECKPOINT, K.TRAINER_WEIGHT_SYNC)
_RESYNC_S = 2.0  # re-anchor a chained step end on its own log time when they drift apart by more than this


@dataclass
class Perf:
    """One `perf {rollout_id}` dict and when it was logged (epoch seconds, NaN if unknown)."""

    values: dict[str, Any]
    ts: float
    origin: str
    clock: str = "console"  # "console" (naive local log time) or "epoch" (TensorBoard wall time)


@dataclass
class StepParts:
    step: int
    total: float
    parts: dict[str, float]  # wait/compute/weight_sync/checkpoint/other
    other_in_train: float
    other_before_train: float


def _timer(values: dict[str, Any], name: str) -> float:
    value = values.get(f"perf/{name}_time")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def decompose(
    rollout_id: int, perf: Perf, carried: float, inner: StepBreakdown, outer: StepBreakdown, warnings: list[str]
) -> StepParts | None:
    """Split one step into the five components; `carried` = ref_model_update time logged with the previous step.
    `inner` settles the train block (compute, then its remainder), `outer` the step (trainer.wait is what is left)."""
    v = perf.values
    if "perf/train_wait_time" in v and "perf/train_time" in v:
        total = _timer(v, "train_wait") + _timer(v, "train")
    else:
        total = next((float(v[k]) for k in M.STEP_TIME_KEYS if isinstance(v.get(k), (int, float))), math.nan)
    if not math.isfinite(total) or "perf/train_time" not in v:
        warnings.append(f"{perf.origin}: trainer perf {rollout_id} has no train_wait/train timers; step skipped")
        return None
    step = rollout_id + 1
    compute = sum(_timer(v, name) for name in M.COMPUTE_IN_TRAIN)
    other_in_train = inner.rest(step, _timer(v, "train"), compute, perf.origin)
    named = {K.TRAINER_COMPUTE: compute, K.TRAINER_OTHER: carried}
    for name, key in M.WAIT_CONTAINED.items():
        named[key] = named.get(key, 0.0) + _timer(v, name)
    other_before = named[K.TRAINER_OTHER]
    named[K.TRAINER_OTHER] = other_before + other_in_train
    parts = outer.settle(step, total, named, perf.origin)
    return StepParts(step, total, parts, other_in_train, other_before)


def carried_ref_update(perf: Perf) -> float:
    """ref_model_update time of this dict, which lies in the next step's train_wait."""
    return sum(_timer(perf.values, name) for name in M.NEXT_STEP_WAIT_CONTAINED)


def step_ends(steps: list[StepParts], log_times: list[float]) -> list[float]:
    """End of each step: chained by exact durations from the first log time, re-anchored where logs say otherwise.

    Log times have one-second resolution; chaining keeps consecutive steps contiguous and exact in length."""
    ends: list[float] = []
    for s, logged in zip(steps, log_times, strict=True):
        chained = ends[-1] + s.total if ends else logged
        ends.append(chained if abs(chained - logged) <= _RESYNC_S else logged)
    return ends


def emit_spans(builder: TraceBuilder, steps: list[StepParts], ends: list[float], origin: float) -> None:
    """Step spans plus component spans laid out in slime's loop order (checkpoint, weight sync, wait, offload/onload
    and data fetch, then the train block: compute, then its remainder); lengths are the timers' exactly."""
    for s, end in zip(steps, ends, strict=True):
        t1 = end - origin
        t0 = t1 - s.total
        builder.span(K.TRAINER_STEP, t0, t1, step=s.step, actor="trainer")
        cursor = t0
        layout = [(k, s.parts[k]) for k in _ORDER_BEFORE_WAIT]
        layout += [(K.TRAINER_WAIT, s.parts[K.TRAINER_WAIT]), (K.TRAINER_OTHER, s.other_before_train)]
        layout += [(K.TRAINER_COMPUTE, s.parts[K.TRAINER_COMPUTE]), (K.TRAINER_OTHER, s.other_in_train)]
        for key, seconds in layout:
            if seconds <= 0:
                continue
            builder.span(key, cursor, cursor + seconds, step=s.step, actor="trainer")
            cursor += seconds


def emit_generator_pauses(
    builder: TraceBuilder,
    steps: list[StepParts],
    ends: list[float] | None,
    origin: float,
    mode: str,
    rollout_ends: dict[int, float],
) -> None:
    """When slime's loop keeps the generator from admitting work (derived from the loop structure):

    - every mode: weight updates pause generation (SGLang pause_generation, or engines released when colocated);
    - sync (train.py): generation runs only while the trainer waits, so the rest of each step is paused;
    - one_step_off (train_async.py): once rollout k+1 is done the generator idles until train step k ends and the
      driver launches rollout k+2.
    Spans when step times are known (rollout_ends: rollout id -> log time, epoch s), else per-step agg seconds."""
    for i, s in enumerate(steps):
        paused = s.total - s.parts[K.TRAINER_WAIT] if mode == "sync" else s.parts[K.TRAINER_WEIGHT_SYNC]
        if ends is None:
            if paused > 0:
                builder.agg(K.GENERATOR_PAUSED, s.step, paused, actor="generator")
            continue
        t1 = ends[i] - origin
        t0 = t1 - s.total
        if mode == "sync":
            wait_start = t0 + s.parts[K.TRAINER_CHECKPOINT] + s.parts[K.TRAINER_WEIGHT_SYNC]
            wait_end = wait_start + s.parts[K.TRAINER_WAIT]
            for a, b in ((t0, wait_start), (wait_end, t1)):
                if b > a:
                    builder.span(
                        K.GENERATOR_PAUSED,
                        a,
                        b,
                        step=s.step,
                        actor="generator",
                        attrs='{"reason":"sync loop: trainer busy"}',
                    )
            continue
        sync_start = t0 + s.parts[K.TRAINER_CHECKPOINT]
        if s.parts[K.TRAINER_WEIGHT_SYNC] > 0:
            builder.span(
                K.GENERATOR_PAUSED,
                sync_start,
                sync_start + s.parts[K.TRAINER_WEIGHT_SYNC],
                step=s.step,
                actor="generator",
                attrs='{"reason":"weight update"}',
            )
        next_done = rollout_ends.get(s.step)  # rollout k+1 for step k+1 (= slime rollout id s.step)
        if mode == "one_step_off" and next_done is not None and next_done - origin < t1:
            builder.span(
                K.GENERATOR_PAUSED,
                max(t0, next_done - origin),
                t1,
                step=s.step,
                actor="generator",
                attrs='{"reason":"one-step-off: next batch done, trainer busy"}',
            )
