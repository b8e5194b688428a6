"""Turn what was read from a prime-rl run (RunData) into canonical trace events."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from benchbed.adapters.prime_rl.keymap import COUNTERS, FRAMEWORK_METRICS, PAUSE_KEYS, quality_of
from benchbed.adapters.prime_rl.model import Episode, RunData, SandboxBoot

from benchbed.adapterkit.breakdown import StepBreakdown, emit_step
from benchbed.adapterkit.groups import GroupStats, group_stats
from benchbed.adapterkit.rows import EventRows
from benchbed.adapterkit.shared import failure_reason, redact
from benchbed.api import TraceBuilder, attrs_json
from benchbed.api import keys as K


@dataclass
class Shape:
    """Run settings the statuses depend on (from the resolved configs, when the run directory has them)."""

    max_off_policy_steps: int | None = None
    partial: bool = False


NO_WAIT = (K.TRAINER_WAIT,)  # an SFT trainer reads its own dataset: it waits for no batch


def time_origin(data: RunData) -> float:
    """Earliest known instant of the run (epoch or log-clock seconds); event times are relative to it."""
    starts: list[float] = []
    starts += [s.t_end - s.step_s for s in data.trainer.values() if math.isfinite(s.t_end) and math.isfinite(s.step_s)]
    starts += [e.t0 for e in data.episodes if math.isfinite(e.t0)]
    starts += [b.t0 for e in data.episodes for b in e.boots]
    starts += [p[0] for p in data.pauses]
    return min(starts) if starts else 0.0


def emit_trainer(b: TraceBuilder, data: RunData, warnings: list[str], waits: bool = True) -> None:
    """Per-step agg rows: trainer.step and the five components, which sum to the step; without `waits` (an SFT
    trainer reads its own dataset and waits for no batch) no trainer.wait row."""
    breakdown = StepBreakdown(what="time/wait_for_batch, forward_backward, broadcast_weights and save_ckpt")
    off = data.step_offset
    for step in sorted(data.trainer):
        s = data.trainer[step]
        k = step + off
        if math.isnan(s.compute_s):
            # Console logs: only the step time and (at debug level) the wait are known.
            b.agg(K.TRAINER_STEP, k, s.step_s, actor="trainer")
            if waits and not math.isnan(s.wait_s):
                b.agg(K.TRAINER_WAIT, k, min(s.wait_s, s.step_s), actor="trainer")
            continue
        named = {
            K.TRAINER_WAIT: s.wait_s,
            K.TRAINER_COMPUTE: s.compute_s,
            K.TRAINER_WEIGHT_SYNC: s.weight_sync_s,
            K.TRAINER_CHECKPOINT: s.checkpoint_s,
        }
        emit_step(b, k, s.step_s, breakdown.settle(k, s.step_s, named, s.source), leave=() if waits else NO_WAIT)
        for name, value in s.native.items():
            b.agg(f"native.trainer.{name}", k, value, actor="trainer")
    overrun = breakdown.warning()
    if overrun:
        warnings.append(overrun)


def emit_orchestrator(b: TraceBuilder, data: RunData, counters_from_episodes: bool) -> None:
    """Per-step agg rows: generator.paused, framework staleness figures, native orchestrator figures."""
    off = data.step_offset
    for step in sorted(data.orchestrator):
        k = step + off
        values = data.orchestrator[step].values
        for key in PAUSE_KEYS:
            if key in values:
                b.agg(K.GENERATOR_PAUSED, k, values[key], actor="orchestrator")
                break
        learning: dict[str, list[float]] = {}
        for key, value in values.items():
            if key in FRAMEWORK_METRICS:
                b.agg(FRAMEWORK_METRICS[key], k, value, actor="orchestrator")
            if (quality := quality_of(key)) is not None:
                learning.setdefault(quality, []).append(value)
            else:
                b.agg(f"native.orchestrator.{key}", k, value, actor="orchestrator")
        for quality, scores in learning.items():  # prime-rl logs them per agent: their mean, one row a step
            b.agg(quality, k, sum(scores) / len(scores), actor="orchestrator")
        for native, key in COUNTERS.items():
            if native in values and not (counters_from_episodes and key == K.SAMPLES_FINISHED):
                b.agg(key, k, values[native], actor="orchestrator")
    for step, scores in sorted(data.evals.items()):  # evaluation rows, per environment and agent
        for quality, values in scores.items():
            b.agg(quality, step + off, sum(values) / len(values), actor="orchestrator")


def emit_pauses(b: TraceBuilder, data: RunData, origin: float) -> None:
    for t0, t1 in data.pauses:
        b.span(K.GENERATOR_PAUSED, t0 - origin, max(t0, t1) - origin, actor="orchestrator")


def rollout_status(
    e: Episode, data: RunData, shape: Shape, zero_adv_groups: set[str], any_effective: bool, unfinished: set[int]
) -> str:
    """Why an episode was or was not trained on (`unfinished`: shipped steps a crashed trainer never completed)."""
    if e.id in data.trained_at:
        return "aborted" if data.trained_at[e.id] in unfinished else "ok"
    if "Cancel" in e.error_type or e.stop == "cancelled":
        return "aborted"
    if e.error_type or not e.ok:
        return "failed"
    if not any_effective:
        return "ok"
    if e.window_step not in data.effective_steps:
        return "aborted" if shape.partial else "discarded"
    bound = shape.max_off_policy_steps
    if bound is not None and e.v_start >= 0 and (e.window_step - 1) - e.v_start > bound:
        return "dropped_stale"
    if e.group in zero_adv_groups:
        return "filtered_zero_adv"
    return "discarded"


def unfinished_steps(data: RunData, shape: Shape) -> set[int]:
    """Steps whose batch was shipped but never trained: past the last trainer row of a crashed run."""
    if not shape.partial or not data.trainer:
        return set()
    last = max(data.trainer)
    return {s for s in data.effective_steps if s > last}


def group_facts(episodes: list[Episode]) -> dict[str, tuple[GroupStats, float, int]]:
    """group id -> (reward statistics over clean members, finish time, window step of the last member).

    Clean members finished without an error; their rewards go to the kit's group statistics (one NaN policy)."""
    members: dict[str, list[Episode]] = defaultdict(list)
    for e in episodes:
        if e.group:
            members[e.group].append(e)
    out = {}
    for gid, group in members.items():
        ends = [e.t1 for e in group if math.isfinite(e.t1)]
        stats = group_stats(e.reward for e in group if e.ok and not e.error_type)
        out[gid] = (stats, max(ends) if ends else math.nan, max(e.window_step for e in group))
    return out


@lru_cache(maxsize=65536)
def cached_attrs(items: tuple[tuple[str, object], ...]) -> str:
    """attrs JSON for rows that repeat the same few attributes (most rollouts of a step share them)."""
    return attrs_json(dict(items))


def emit_episodes(b: TraceBuilder, data: RunData, shape: Shape, origin: float, warnings: list[str]) -> None:
    """rollout rows, rollout.group points, sandbox.start spans, and per-step counters from the episodes."""
    stats = group_facts(data.episodes)
    zero_adv = {gid for gid, (g, _, _) in stats.items() if g.zero_advantage}
    any_effective = bool(data.effective_steps)
    if data.episodes and not any_effective and any(e.window_step >= 0 for e in data.episodes):
        warnings.append("no rollouts/step_*/train/effective/traces.jsonl: which episodes were trained on is unknown")
    unfinished = unfinished_steps(data, shape)
    rows = EventRows()
    finished: dict[int, int] = defaultdict(int)
    trained: dict[int, int] = defaultdict(int)
    for e in data.episodes:
        status = rollout_status(e, data, shape, zero_adv, any_effective, unfinished)
        trained_step = data.trained_at.get(e.id, -1) if status == "ok" else -1
        # An untrained episode belongs to the batch window it arrived in (rollouts/step_N); v_train stays -1.
        step = trained_step if trained_step > 0 else e.window_step
        attrs: tuple[tuple[str, object], ...] = (("env", e.env), ("reward", e.reward), ("window_step", e.window_step))
        if e.error_type:
            attrs += (("error", e.error_type), ("message", redact(e.error_message)))
        if e.stop:
            attrs += (("stop", e.stop),)
        timed = math.isfinite(e.t0) and math.isfinite(e.t1)
        rows.add(
            K.ROLLOUT,
            "span" if timed else "point",
            step,
            e.t0 - origin if timed else math.nan,
            max(e.t0, e.t1) - origin if timed else math.nan,
            e.reward,
            "generator",
            e.id,
            e.group,
            e.v_start,
            e.v_end,
            trained_step - 1 if trained_step > 0 else -1,
            status,
            cached_attrs(attrs),
            e.prompt_tokens,
            e.response_tokens,
        )
        if e.window_step >= 0:
            finished[e.window_step] += 1
        if trained_step > 0:
            trained[trained_step] += 1
        for boot in e.boots:
            _sandbox_start(rows, e, boot, origin)
    groups_finished, groups_zero = _groups(rows, data, stats, zero_adv, unfinished, origin)
    rows.flush(b)
    for step, n in finished.items():
        b.agg(K.SAMPLES_FINISHED, step, float(n), actor="generator")
        b.agg(K.GROUPS_FINISHED, step, float(groups_finished.get(step, 0)), actor="generator")
        b.agg(K.GROUPS_ZERO_ADV, step, float(groups_zero.get(step, 0)), actor="generator")
    for step, n in trained.items():
        b.agg(K.SAMPLES_TRAINED, step, float(n), actor="trainer")
        b.agg(K.SAMPLES_ACCEPTED, step, float(n), actor="generator")


def _sandbox_start(rows: EventRows, e: Episode, boot: SandboxBoot, origin: float) -> None:
    """One sandbox.start span: ok, or the normalized reason with the provider's message in attrs."""
    message = boot.message or (f"{e.error_type}: {e.error_message}" if e.error_type else "")
    attrs: tuple[tuple[str, object], ...] = (("runtime", boot.runtime),)
    if boot.image_cached is not None:
        attrs += (("image_cached", boot.image_cached),)
    if not boot.ok:
        attrs += (("sandbox_id", boot.sandbox_id), ("message", redact(message)))
    status = "ok" if boot.ok else failure_reason(message)
    rows.add(
        K.SANDBOX_START,
        "span",
        e.window_step,
        boot.t0 - origin,
        max(boot.t0, boot.t1) - origin,
        math.nan,
        "sandbox",
        e.id,
        e.group,
        status=status,
        attrs=cached_attrs(attrs),
    )


def _groups(
    rows: EventRows,
    data: RunData,
    stats: dict[str, tuple[GroupStats, float, int]],
    zero_adv: set[str],
    unfinished: set[int],
    origin: float,
) -> tuple[dict[int, int], dict[int, int]]:
    """rollout.group points; returns finished and zero-advantage group counts per window step."""
    groups_finished: dict[int, int] = defaultdict(int)
    groups_zero: dict[int, int] = defaultdict(int)
    trained_groups: dict[str, int] = {}
    for e in data.episodes:
        step = data.trained_at.get(e.id)
        if e.group and step is not None and step not in unfinished:
            trained_groups[e.group] = max(trained_groups.get(e.group, -1), step)
    for gid, (g, t_end, window) in stats.items():
        if g.n == 0:
            continue
        status = "filtered_zero_adv" if gid in zero_adv else "ok"
        t0 = t_end - origin if math.isfinite(t_end) else math.nan
        rows.add(
            K.ROLLOUT_GROUP,
            "point",
            trained_groups.get(gid, window),
            t0,
            math.nan,
            g.std,
            "generator",
            "",
            gid,
            status=status,
            attrs=attrs_json({"clean_samples": g.n}),
        )
        if window >= 0:
            groups_finished[window] += 1
            groups_zero[window] += gid in zero_adv
    return groups_finished, groups_zero
