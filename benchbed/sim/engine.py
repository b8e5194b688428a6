"""Discrete-event simulation of a generator and a trainer joined by a queue (DESIGN §7).

The generator has `concurrency` sample slots; a GRPO group of G samples is dispatched when G slots are free and
admission allows it, and it enters the queue when its last sample finishes. The trainer takes B = prompts × G
samples per step. Modes differ only in admission and in when the generator's weights change:

- sync: admission bound (v + 1)·B — generation of batch k+1 waits for step k (colocated alternation);
- one_step_off: batches generated one after another, batch j starting once batch j−1 is finished and v ≥ j−2;
  weights are loaded at batch boundaries only;
- async/count: AReaL admission, samples started < (max_staleness + v + 1)·B; weights update in flight;
- async/drop: no admission bound; groups with v_train − v_start > max_staleness are dropped at training time.

Optional mechanisms (off by default, so the default path stays fast): a batch-filling generator with
oversampling (`oversample`: rounds of factor × B/G groups, surplus discarded, carried or aborted and buffered as
partial rollouts), weight pushes every `update_weights_interval` steps that may abort in-flight samples, a
sandbox started on each sample's critical path, multi-turn environment time, token counts with a response cap,
and throughput-bound inference engines (see config.py).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchbed.sim.config import Latency, PassRate, SimConfig, Spread

OK, DROPPED_STALE, FILTERED_ZERO_ADV, ABORTED, DISCARDED = 0, 1, 2, 3, 4
STATUS_NAMES = ("ok", "dropped_stale", "filtered_zero_adv", "aborted", "discarded")
SANDBOX_STATUSES = ("ok", "start_timeout", "no_capacity", "internal")
SANDBOX_QUEUE_ROW, SANDBOX_START_ROW = 0, 1
_BLOCK = 1 << 14


@dataclass(frozen=True)
class SimParams:
    steps: int
    samples_per_step: int
    group_size: int
    max_staleness: int
    config: SimConfig
    max_response_tokens: int = 1 << 62
    resources: dict[str, Any] | None = None  # GPU counts and prices, for the cost metrics


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
    step_aborted: np.ndarray | None = None  # samples aborted and buffered during each step (partial rollout)
    sample_response_tokens: np.ndarray | None = None
    prompt_tokens: int | None = None
    sample_attrs: dict[int, str] | None = None  # JSON attrs of resumed or masked samples, by sample index
    sandbox_rows: np.ndarray | None = None  # (n, 5): row kind, sample, t0, t1, status index


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


def mean_latency(latency: Latency) -> float:
    return float(np.mean(latency.values)) if latency.dist == "empirical" and latency.values else latency.mean


def spread_draw(spread: Spread, rng: np.random.Generator, n: int) -> np.ndarray:
    """n lognormal draws with the spread's mean and cv (all equal to the mean when cv = 0)."""
    if spread.cv == 0:
        return np.full(n, spread.mean)
    sigma2 = math.log1p(spread.cv**2)
    return rng.lognormal(math.log(spread.mean) - sigma2 / 2, math.sqrt(sigma2), n)


def saturation_factor(cfg: SimConfig) -> float:
    """LLM time multiplier of throughput-bound engines: max(1, concurrency / (engines × seqs_per_engine))."""
    sat = cfg.saturation
    return 1.0 if sat is None else max(1.0, cfg.concurrency / (sat.engines * sat.seqs_per_engine))


def sample_block(cfg: SimConfig, cap: int, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """Draws of (latency, response tokens) per sample as a (2, n) array: LLM time (saturated, truncated at the
    response cap when tokens are modelled) plus environment time over the sample's tool calls."""
    llm = latency_draws(cfg.latency, rng)._draw_block
    factor = saturation_factor(cfg)
    mean_llm = mean_latency(cfg.latency) * factor

    def block(n: int) -> np.ndarray:
        time = llm(n) * factor
        tokens = np.full(n, -1.0)
        if cfg.tokens is not None:
            tokens = cfg.tokens.response_mean * time / mean_llm
            over = tokens > cap
            tokens[over] = cap
            time[over] = cap / cfg.tokens.response_mean * mean_llm
            tokens = np.maximum(1.0, np.round(tokens))
        if cfg.turns is not None:
            turns = cfg.turns
            counts = rng.poisson(turns.count, n) if turns.dist == "poisson" else np.full(n, round(turns.count))
            per_call = spread_draw(turns.env_s, rng, int(counts.sum()))
            time = time + np.bincount(np.repeat(np.arange(n), counts), weights=per_call, minlength=n)
        return np.stack([time, tokens])

    return block


class _PairDraws:
    """Like _Draws, for (latency, tokens) pairs."""

    def __init__(self, draw_block: Callable[[int], np.ndarray]) -> None:
        self._draw_block = draw_block
        self._buffer: list[tuple[float, float]] = []
        self._pos = 0

    def take(self, n: int) -> list[tuple[float, float]]:
        if self._pos + n > len(self._buffer):
            block = self._draw_block(max(_BLOCK, n))
            self._buffer = self._buffer[self._pos :] + list(zip(block[0].tolist(), block[1].tolist(), strict=True))
            self._pos = 0
        out = self._buffer[self._pos : self._pos + n]
        self._pos += n
        return out


def pass_rate_draws(pass_rate: PassRate, rng: np.random.Generator) -> _Draws:
    if pass_rate.dist == "beta":
        return _Draws(lambda n: rng.beta(pass_rate.a, pass_rate.b, n))
    if pass_rate.dist == "mixture":

        def mixture(n: int) -> np.ndarray:
            u = rng.random(n)
            p = rng.beta(pass_rate.a, pass_rate.b, n)
            p[u < pass_rate.always + pass_rate.never] = 0.0
            p[u < pass_rate.always] = 1.0
            return p

        return _Draws(mixture)
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
    extras = cfg.tokens is not None or cfg.turns is not None or cfg.sandbox is not None
    if extras:
        pairs = _PairDraws(sample_block(cfg, params.max_response_tokens, rng))
    if cfg.saturation is None:
        latencies = latency_draws(cfg.latency, rng)
    else:
        saturated = sample_block(cfg, params.max_response_tokens, rng)
        latencies = _Draws(lambda n: saturated(n)[0])
    pass_rates = pass_rate_draws(cfg.pass_rate, rng)
    uniforms = _Draws(rng.random)
    sandbox = cfg.sandbox
    sandbox_starts = _Draws(lambda n: spread_draw(sandbox.start_s, rng, n)) if sandbox is not None else None

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
    interval = cfg.update_weights_interval
    rounds = cfg.oversample is not None
    need = B // G
    quota = math.ceil(cfg.oversample.factor * need - 1e-9) if rounds else 0
    surplus_policy = cfg.oversample.policy if rounds else ""
    partial = cfg.abort_on_weight_push or surplus_policy == "partial"
    track_live = partial or surplus_policy == "carry"
    reprefill = cfg.reprefill_fraction

    # Per-sample and per-group state, grown as groups are dispatched.
    s_t1: list[float] = []
    s_v_end: list[int] = []
    s_slot: list[int] = []
    s_reward: list[float] = []
    s_tokens: list[float] = []
    s_end: list[float] = []  # scheduled end of the running segment (partial rollout); inf while buffered
    s_began: list[float] = []
    s_work: list[float] = []
    s_left: list[float] = []
    s_resumes: dict[int, list[int]] = {}  # sample -> [resumes, v_start, v_resume]
    masked: set[int] = set()
    sandbox_rows: list[tuple[int, int, float, float, int]] = []
    g_t0: list[float] = []
    g_done: list[float] = []
    g_v_start: list[int] = []
    g_v_train: list[int] = []
    g_step: list[int] = []
    g_status: list[int] = []
    g_std: list[float] = []
    g_remaining: list[int] = []
    g_round: list[int] = []
    st_start: list[float] = []
    st_ready: list[float] = []
    st_compute_end: list[float] = []
    st_end: list[float] = []
    st_aborted: list[int] = []
    paused: list[tuple[float, float]] = []

    free_slots = list(range(cfg.concurrency - 1, -1, -1))
    heap: list[tuple[float, int]] = []
    queue: deque[int] = deque()
    queued_samples = 0
    version = gen_version = 0
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
    # Batch-filling generator (oversampling / partial rollout) and the partial-rollout buffer.
    dispatch_round = round_dispatched = fill_round = fill_count = 0
    early: dict[int, list[int]] = {}
    live_groups: set[int] = set()
    buffered: deque[int] = deque()
    aborted_in_step = 0
    carried = 0  # surplus groups kept (carry, partial) that have not yet been counted against a round's quota
    credited: set[int] = set()  # surplus groups already counted once
    # Sandbox provider state: next create slot (rate limit) and ends of starts in progress (max_starting).
    next_create = 0.0
    starting: list[float] = []

    def start_round(index: int) -> None:
        """Begin dispatching round `index`; carried or buffered surplus groups fill part of its quota."""
        nonlocal dispatch_round, round_dispatched, carried
        dispatch_round = index
        round_dispatched = min(carried, quota)
        carried -= round_dispatched

    def admitted() -> bool:
        if rounds:
            if round_dispatched >= quota:
                start_round(dispatch_round + 1)
            return dispatch_round <= version + lookahead
        # Filtered or dropped groups do not count against admission: they are replaced (dynamic sampling).
        counted = started - discarded
        if counted + G > (lookahead + version + 1) * B:
            return False
        # Batch modes: a new batch starts only after every sample of the previous one has finished.
        return not (batch_mode and counted % B == 0 and finished < started)

    def start_sandbox(now: float, sample: int, live: int) -> tuple[float, bool]:
        """Start the sample's sandbox (with retries): when it is ready, or when the last attempt failed."""
        nonlocal next_create
        assert sandbox is not None and sandbox_starts is not None
        t = now
        attempts = sandbox.max_retries + 1 if sandbox.policy == "retry" else 1
        for attempt in range(attempts):
            created = t
            if sandbox.create_rate is not None:
                created = max(created, next_create)
                next_create = created + 1.0 / sandbox.create_rate
            if sandbox.max_starting is not None:
                while starting and starting[0] <= created:
                    heapq.heappop(starting)
                if len(starting) >= sandbox.max_starting:
                    created = max(created, heapq.heappop(starting))
            deadline = t + sandbox.start_timeout_s
            ready = created + sandbox_starts.take(1)[0]
            if sandbox.account_limit is not None and live >= sandbox.account_limit:
                status, end = 2, deadline  # no capacity: the start hangs until the timeout (init dead)
            elif ready > deadline:
                status, end = 1, deadline
            elif sandbox.fail_p > 0 and uniforms.take(1)[0] < sandbox.fail_p:
                status, end = 3, ready
            else:
                status, end = 0, ready
            created = min(created, end)
            if sandbox.max_starting is not None:
                heapq.heappush(starting, end)
            if created > t:
                sandbox_rows.append((SANDBOX_QUEUE_ROW, sample, t, created, 0))
            sandbox_rows.append((SANDBOX_START_ROW, sample, created, end, status))
            if status == 0:
                return end, True
            t = end + sandbox.backoff_s * 2**attempt
        return end, False

    def new_group(now: float) -> None:
        """Dispatch one new group into free slots."""
        nonlocal started, batch_version, round_dispatched
        if batch_mode and (started - discarded) % B == 0:
            batch_version = version
        group = len(g_t0)
        g_t0.append(now)
        g_done.append(math.nan)
        g_v_start.append(batch_version if batch_mode and not rounds else gen_version)
        g_v_train.append(-1)
        g_step.append(-1)
        g_status.append(OK)
        g_remaining.append(G)
        p = pass_rates.take(1)[0]
        rewards = [1.0 if u < p else 0.0 for u in uniforms.take(G)]
        first = group * G
        if not extras:
            for j, latency in enumerate(latencies.take(G)):
                slot = free_slots.pop()
                s_slot.append(slot)
                s_t1.append(math.nan)
                s_v_end.append(-1)
                if partial:
                    s_end.append(now + latency)
                    s_began.append(now)
                    s_work.append(0.0)
                    s_left.append(0.0)
                heapq.heappush(heap, (now + latency, first + j))
        else:
            for j, (latency, tokens) in enumerate(pairs.take(G)):
                sample = first + j
                if sandbox is not None:
                    ready, ok = start_sandbox(now, sample, cfg.concurrency - len(free_slots))
                    if not ok:  # init failed for good: a reward-0 masked sample at the failure time
                        masked.add(sample)
                        rewards[j] = 0.0
                        latency, tokens = ready - now, 0.0
                    else:
                        latency += ready - now
                slot = free_slots.pop()
                s_slot.append(slot)
                s_t1.append(math.nan)
                s_v_end.append(-1)
                s_tokens.append(tokens)
                if partial:
                    s_end.append(now + latency)
                    s_began.append(now)
                    s_work.append(0.0)
                    s_left.append(0.0)
                heapq.heappush(heap, (now + latency, sample))
        mean = sum(rewards) / G
        g_std.append(math.sqrt(max(0.0, mean - mean * mean)))
        s_reward.extend(rewards)
        started += G
        if rounds:
            g_round.append(dispatch_round)
            round_dispatched += 1
        if track_live:
            live_groups.add(group)

    def unfinished(group: int) -> list[int]:
        return [s for s in range(group * G, group * G + G) if s_t1[s] != s_t1[s]]

    def resume(now: float) -> None:
        """Resume buffered partial groups first: their sandbox state is kept, the prefix is prefilled again."""
        while buffered:
            samples = unfinished(buffered[0])
            if len(free_slots) < len(samples):
                return
            group = buffered.popleft()
            for sample in samples:
                s_slot[sample] = free_slots.pop()
                s_began[sample] = now
                s_end[sample] = now + s_left[sample]
                info = s_resumes.setdefault(sample, [0, g_v_start[group], gen_version])
                info[0] += 1
                info[2] = gen_version
                heapq.heappush(heap, (s_end[sample], sample))
            live_groups.add(group)

    def abort(now: float, groups: list[int], next_round: int) -> None:
        """Abort the groups' running samples into the buffer (slots freed; remaining work plus re-prefill kept)."""
        nonlocal aborted_in_step
        for group in groups:
            live_groups.discard(group)
            for sample in unfinished(group):
                if s_end[sample] == math.inf:
                    continue
                s_work[sample] += now - s_began[sample]
                s_left[sample] = s_end[sample] - now + reprefill * s_work[sample]
                s_end[sample] = math.inf
                free_slots.append(s_slot[sample])
                aborted_in_step += 1
            if rounds:
                g_round[group] = max(g_round[group], next_round)
            buffered.append(group)

    def dispatch(now: float) -> None:
        nonlocal paused_since
        if buffered:
            resume(now)
            if buffered:
                return
        while len(free_slots) >= G:
            if not admitted():
                if paused_since < 0:
                    paused_since = now
                return
            if paused_since >= 0:
                if now > paused_since:
                    paused.append((paused_since, now))
                paused_since = -1.0
            new_group(now)

    def accept(group: int, now: float) -> None:
        nonlocal queued_samples, fill_count
        queue.append(group)
        queued_samples += G
        if not rounds:
            return
        fill_count += 1
        if fill_count >= need:
            filled_round(now)

    def filled_round(now: float) -> None:
        """The batch of `fill_round` is full: deal with its surplus, move on to the next round."""
        nonlocal fill_round, fill_count, carried
        filled = fill_round
        fill_round += 1
        fill_count = 0
        surplus = [g for g in live_groups if g_round[g] <= filled] if surplus_policy != "discard" else []
        if surplus_policy == "partial":
            abort(now, surplus, fill_round)
        fresh = [g for g in surplus if g not in credited]
        credited.update(fresh)
        carried += len(fresh)
        if dispatch_round < fill_round:
            start_round(fill_round)
        for group in early.pop(fill_round, []):
            accept(group, now)

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
                if sync_time > 0 and (steps_done + 1) % interval == 0:
                    trainer_phase = 2
                    trainer_event_t = now + sync_time
                    continue
            st_end.append(now)
            discarded_since_step = 0
            steps_done += 1
            version += 1
            if partial:
                st_aborted.append(aborted_in_step)
                aborted_in_step = 0
            if steps_done % interval == 0:
                gen_version = version
                if cfg.abort_on_weight_push:
                    abort(now, sorted(live_groups), fill_round)
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
        if partial and now != s_end[sample]:
            continue  # the segment was aborted; its event is stale
        s_t1[sample] = now
        s_v_end[sample] = batch_version if batch_mode and not rounds else gen_version
        free_slots.append(s_slot[sample])
        finished += 1
        group = sample // G
        g_remaining[group] -= 1
        if g_remaining[group] == 0:
            g_done[group] = now
            if track_live:
                live_groups.discard(group)
            rejected = -1
            if filter_zero_adv and g_std[group] == 0.0:
                rejected = FILTERED_ZERO_ADV
            elif drop_stale and version - g_v_start[group] > max_staleness:
                rejected = DROPPED_STALE
            elif rounds and g_round[group] < fill_round and surplus_policy == "discard":
                rejected = DISCARDED
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
            elif rounds and g_round[group] > fill_round:
                early.setdefault(g_round[group], []).append(group)
            else:
                accept(group, now)
                if trainer_waiting:
                    take_batch(now)
        dispatch(now)

    if paused_since >= 0 and now > paused_since:
        paused.append((paused_since, now))
    sample_t1 = np.asarray(s_t1, dtype=float)
    group_status = np.asarray(g_status, dtype=np.int8)
    attrs: dict[int, str] = {}
    for sample, (resumes, v_start, v_resume) in s_resumes.items():
        attrs[sample] = f'{{"resumes":{resumes},"staleness_env":{max(0, v_resume - v_start)}}}'
    for sample in masked:
        attrs[sample] = '{"masked":"sandbox_init"}'
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
        step_aborted=np.asarray(st_aborted, dtype=np.int64) if partial else None,
        sample_response_tokens=np.asarray(s_tokens, dtype=np.int64) if cfg.tokens is not None else None,
        prompt_tokens=cfg.tokens.prompt if cfg.tokens is not None else None,
        sample_attrs=attrs or None,
        sandbox_rows=np.asarray(sandbox_rows, dtype=float).reshape(-1, 5) if sandbox is not None else None,
    )
