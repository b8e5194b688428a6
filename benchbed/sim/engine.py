"""Discrete-event simulation of a generator and a trainer joined by a queue (DESIGN §7).

The generator has `concurrency` sample slots; a GRPO group of G samples is dispatched when G slots are free and
admission allows it, and it enters the queue when its last sample finishes. The trainer takes B = prompts × G
samples per step. Modes differ only in admission and in when the generator's weights change:

- sync: admission bound (v + 1)·B — generation of batch k+1 waits for step k (colocated alternation);
- one_step_off: batches generated one after another, batch j starting once batch j−1 is finished and v ≥ j−2;
  weights are loaded at batch boundaries only;
- async/count: AReaL admission, samples started < (max_staleness + v + 1)·B; weights update in flight;
- async/drop: no admission bound; groups with v_train − v_start > max_staleness are dropped at training time.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchbed.sim.config import Latency, PassRate, SimConfig

OK, DROPPED_STALE, FILTERED_ZERO_ADV, ABORTED = 0, 1, 2, 3
STATUS_NAMES = ("ok", "dropped_stale", "filtered_zero_adv", "aborted")
_BLOCK = 1 << 14


@dataclass(frozen=True)
class SimParams:
    steps: int
    samples_per_step: int
    group_size: int
    max_staleness: int
    config: SimConfig


@dataclass
class SimOutcome:
    """Per-sample, per-group and per-step arrays; sample i belongs to group i // group_size."""

    end_time: float
    sample_t1: np.ndarray
    sample_v_end: np.ndarray
    sample_slot: np.ndarray
    sample_reward: np.ndarray
    group_t0: np.ndarray
    group_done_t: np.ndarray  # NaN while incomplete
    group_v_start: np.ndarray
    group_v_train: np.ndarray  # -1 if not trained
    group_step: np.ndarray  # step the group was trained, dropped or filtered in; -1 otherwise
    group_status: np.ndarray
    group_reward_std: np.ndarray
    step_start: np.ndarray
    step_batch_ready: np.ndarray
    step_compute_end: np.ndarray
    step_end: np.ndarray
    paused: list[tuple[float, float]]


class _Draws:
    """Random numbers pre-drawn in blocks and handed out as Python floats (fast in the event loop)."""

    def __init__(self, draw_block: Callable[[int], np.ndarray]) -> None:
        self._draw_block = draw_block
        self._buffer: list[float] = []
        self._pos = 0

    def take(self, n: int) -> list[float]:
        if self._pos + n > len(self._buffer):
            self._buffer = self._buffer[self._pos :] + self._draw_block(max(_BLOCK, n)).tolist()
            self._pos = 0
        out = self._buffer[self._pos : self._pos + n]
        self._pos += n
        return out


def latency_draws(latency: Latency, rng: np.random.Generator) -> _Draws:
    if latency.dist == "lognormal":
        sigma2 = math.log1p(latency.cv**2)
        mu = math.log(latency.mean) - sigma2 / 2
        return _Draws(lambda n: rng.lognormal(mu, math.sqrt(sigma2), n))
    if latency.dist == "empirical":
        values = np.asarray(latency.values, dtype=float)
        return _Draws(lambda n: rng.choice(values, n))
    return _Draws(lambda n: np.full(n, latency.mean))


def pass_rate_draws(pass_rate: PassRate, rng: np.random.Generator) -> _Draws:
    if pass_rate.dist == "beta":
        return _Draws(lambda n: rng.beta(pass_rate.a, pass_rate.b, n))
    return _Draws(lambda n: np.full(n, pass_rate.p))


def simulate(params: SimParams, progress: Callable[[int], None] | None = None) -> SimOutcome:
    """Run the event loop until `steps` training steps have finished."""
    cfg = params.config
    G, B, steps = params.group_size, params.samples_per_step, params.steps
    if B % G:
        raise ValueError(f"samples per step ({B}) must be a multiple of group_size ({G})")
    if cfg.concurrency < G:
        raise ValueError(f"sim.concurrency ({cfg.concurrency}) is below group_size ({G}): no group could start")
    rng = np.random.default_rng(cfg.seed)
    latencies = latency_draws(cfg.latency, rng)
    pass_rates = pass_rate_draws(cfg.pass_rate, rng)
    uniforms = _Draws(rng.random)

    batch_mode = cfg.mode in ("sync", "one_step_off")
    if cfg.mode == "sync":
        lookahead = 0
    elif cfg.mode == "one_step_off":
        lookahead = 1
    else:
        lookahead = params.max_staleness if cfg.staleness_policy == "count" else math.inf
    drop_stale = cfg.mode == "async" and cfg.staleness_policy == "drop"
    filter_zero_adv = cfg.filter_zero_adv
    train_time, sync_time, max_staleness = cfg.train_step_time, cfg.weight_sync_time, params.max_staleness

    # Per-sample and per-group state, grown as groups are dispatched.
    s_t1: list[float] = []
    s_v_end: list[int] = []
    s_slot: list[int] = []
    s_reward: list[float] = []
    g_t0: list[float] = []
    g_done: list[float] = []
    g_v_start: list[int] = []
    g_v_train: list[int] = []
    g_step: list[int] = []
    g_status: list[int] = []
    g_std: list[float] = []
    g_remaining: list[int] = []
    st_start: list[float] = []
    st_ready: list[float] = []
    st_compute_end: list[float] = []
    st_end: list[float] = []
    paused: list[tuple[float, float]] = []

    free_slots = list(range(cfg.concurrency - 1, -1, -1))
    heap: list[tuple[float, int]] = []
    queue: deque[int] = deque()
    queued_samples = 0
    version = 0
    batch_version = 0
    started = finished = discarded = 0
    discarded_since_step = 0
    max_discarded_per_step = 1000 * B
    steps_done = 0
    paused_since = -1.0
    trainer_waiting = True
    step_started_at = 0.0
    trainer_event_t = math.inf
    trainer_phase = 0  # 1 = compute, 2 = weight sync
    purged_at_version = 0

    def admitted() -> bool:
        # Filtered or dropped groups do not count against admission: they are replaced (dynamic sampling).
        counted = started - discarded
        if counted + G > (lookahead + version + 1) * B:
            return False
        # Batch modes: a new batch starts only after every sample of the previous one has finished.
        return not (batch_mode and counted % B == 0 and finished < started)

    def dispatch(now: float) -> None:
        nonlocal started, paused_since, batch_version
        while len(free_slots) >= G:
            if not admitted():
                if paused_since < 0:
                    paused_since = now
                return
            if paused_since >= 0:
                if now > paused_since:
                    paused.append((paused_since, now))
                paused_since = -1.0
            if batch_mode and (started - discarded) % B == 0:
                batch_version = version
            group = len(g_t0)
            g_t0.append(now)
            g_done.append(math.nan)
            g_v_start.append(batch_version if batch_mode else version)
            g_v_train.append(-1)
            g_step.append(-1)
            g_status.append(OK)
            g_remaining.append(G)
            p = pass_rates.take(1)[0]
            rewards = [1.0 if u < p else 0.0 for u in uniforms.take(G)]
            total = sum(rewards)
            mean = total / G
            g_std.append(math.sqrt(max(0.0, mean - mean * mean)))
            first = group * G
            for j, latency in enumerate(latencies.take(G)):
                slot = free_slots.pop()
                s_slot.append(slot)
                s_t1.append(math.nan)
                s_v_end.append(-1)
                heapq.heappush(heap, (now + latency, first + j))
            s_reward.extend(rewards)
            started += G

    def take_batch(now: float) -> None:
        nonlocal queued_samples, trainer_waiting, trainer_event_t, trainer_phase
        nonlocal purged_at_version, discarded
        if drop_stale and purged_at_version != version:
            # Staleness only grows when the version does: purge the whole queue once per version.
            purged_at_version = version
            kept = [g for g in queue if version - g_v_start[g] <= max_staleness]
            for dropped in set(queue).difference(kept):
                g_status[dropped] = DROPPED_STALE
                g_step[dropped] = steps_done + 1
                discarded += G
            queued_samples = len(kept) * G
            queue.clear()
            queue.extend(kept)
        if queued_samples < B:
            return
        for _ in range(B // G):
            group = queue.popleft()
            g_v_train[group] = version
            g_step[group] = steps_done + 1
        queued_samples -= B
        trainer_waiting = False
        st_start.append(step_started_at)
        st_ready.append(now)
        trainer_phase = 1
        trainer_event_t = now + train_time

    dispatch(0.0)
    now = 0.0
    while steps_done < steps:
        next_sample_t = heap[0][0] if heap else math.inf
        if trainer_event_t <= next_sample_t:
            if trainer_event_t == math.inf:
                raise RuntimeError("simulation stalled: no sample in flight and the trainer is waiting")
            now = trainer_event_t
            if trainer_phase == 1:
                st_compute_end.append(now)
                if sync_time > 0:
                    trainer_phase = 2
                    trainer_event_t = now + sync_time
                    continue
            st_end.append(now)
            discarded_since_step = 0
            steps_done += 1
            version += 1
            if progress is not None:
                progress(steps_done)
            trainer_waiting = True
            trainer_event_t = math.inf
            trainer_phase = 0
            step_started_at = now
            if steps_done < steps:
                take_batch(now)
            dispatch(now)
            continue
        now, sample = heapq.heappop(heap)
        s_t1[sample] = now
        s_v_end[sample] = batch_version if batch_mode else version
        free_slots.append(s_slot[sample])
        finished += 1
        group = sample // G
        g_remaining[group] -= 1
        if g_remaining[group] == 0:
            g_done[group] = now
            rejected = -1
            if filter_zero_adv and g_std[group] == 0.0:
                rejected = FILTERED_ZERO_ADV
            elif drop_stale and version - g_v_start[group] > max_staleness:
                rejected = DROPPED_STALE
            if rejected >= 0:
                g_status[group] = rejected
                g_step[group] = steps_done + 1
                discarded += G
                discarded_since_step += G
                if discarded_since_step > max_discarded_per_step:
                    raise ValueError(
                        f"no trainable groups: {discarded_since_step} samples in a row were filtered or dropped "
                        "before one training step; check sim.pass_rate, filter_zero_adv and max_staleness"
                    )
            else:
                queue.append(group)
                queued_samples += G
                if trainer_waiting:
                    take_batch(now)
        dispatch(now)

    if paused_since >= 0 and now > paused_since:
        paused.append((paused_since, now))
    sample_t1 = np.asarray(s_t1, dtype=float)
    group_status = np.asarray(g_status, dtype=np.int8)
    return SimOutcome(
        end_time=now,
        sample_t1=sample_t1,
        sample_v_end=np.asarray(s_v_end, dtype=np.int64),
        sample_slot=np.asarray(s_slot, dtype=np.int32),
        sample_reward=np.asarray(s_reward, dtype=float),
        group_t0=np.asarray(g_t0, dtype=float),
        group_done_t=np.asarray(g_done, dtype=float),
        group_v_start=np.asarray(g_v_start, dtype=np.int64),
        group_v_train=np.asarray(g_v_train, dtype=np.int64),
        group_step=np.asarray(g_step, dtype=np.int64),
        group_status=group_status,
        group_reward_std=np.asarray(g_std, dtype=float),
        step_start=np.asarray(st_start, dtype=float),
        step_batch_ready=np.asarray(st_ready, dtype=float),
        step_compute_end=np.asarray(st_compute_end, dtype=float),
        step_end=np.asarray(st_end, dtype=float),
        paused=paused,
    )
