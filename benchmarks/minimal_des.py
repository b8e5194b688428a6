"""The simulator's baseline: the smallest heap-based discrete-event simulation of the same queueing model.

Generator: `concurrency` slots, a group of G samples dispatched when G slots are free and count admission allows
(samples started < (max_staleness + v + 1) * B); lognormal latency per sample; a group enters the queue when its
last sample finishes. Trainer: takes B samples per step, `train_step_time` + `weight_sync_time`, then v += 1.
It records nothing but counts, so its rate is what a bare event loop achieves on this machine."""

from __future__ import annotations

import heapq
import math

import numpy as np

SAMPLE_DONE, STEP_DONE = 0, 1


def lognormal_params(mean: float, cv: float) -> tuple[float, float]:
    sigma2 = math.log(1.0 + cv * cv)
    return math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2)


def simulate(
    steps: int,
    prompts: int,
    group: int,
    concurrency: int,
    max_staleness: int,
    mean: float,
    cv: float,
    train_time: float,
    sync_time: float = 0.0,
    seed: int = 0,
) -> int:
    """Run to `steps` trainer steps; returns the number of samples that finished generating."""
    batch = prompts * group
    mu, sigma = lognormal_params(mean, cv)
    draws = np.random.default_rng(seed).lognormal(mu, sigma, size=(steps + max_staleness + 2) * batch * 2).tolist()
    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    free = concurrency
    started = finished = version = 0
    remaining: dict[int, int] = {}
    queued = 0
    training = False
    next_group = 0
    now = 0.0

    def dispatch() -> None:
        nonlocal free, started, seq, next_group
        while free >= group and started + group <= (max_staleness + version + 1) * batch:
            gid = next_group
            next_group += 1
            remaining[gid] = group
            for _ in range(group):
                heapq.heappush(heap, (now + draws[started], seq, SAMPLE_DONE, gid))
                seq += 1
                started += 1
            free -= group

    def train() -> None:
        nonlocal queued, training, seq
        if not training and queued >= batch:
            queued -= batch
            training = True
            heapq.heappush(heap, (now + train_time + sync_time, seq, STEP_DONE, -1))
            seq += 1

    dispatch()
    while version < steps and heap:
        now, _, kind, gid = heapq.heappop(heap)
        if kind == SAMPLE_DONE:
            free += 1
            finished += 1
            remaining[gid] -= 1
            if remaining[gid] == 0:
                del remaining[gid]
                queued += group
                train()
        else:
            training = False
            version += 1
            train()
        dispatch()
    return finished
