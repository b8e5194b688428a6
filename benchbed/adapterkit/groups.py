"""Per-group reward statistics with one NaN policy, for the rollout.group rows of every adapter.

Policy: non-finite rewards (NaN, ±inf: unscored or failed samples) are left out; the standard deviation is the
population one over the rewards left (one reward: 0.0, none: NaN, never 0). A group has zero advantage when at
least one reward is left and they all agree (GRPO's advantage r - mean is then 0 for every sample)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

ZERO_STD = 1e-12  # rewards closer than this agree (the metrics use the same bound)


@dataclass(frozen=True)
class GroupStats:
    """Mean and population std of a group's finite rewards; n counts them, size counts every member."""

    mean: float
    std: float
    n: int
    size: int

    @property
    def zero_advantage(self) -> bool:
        return self.n > 0 and self.std < ZERO_STD


def group_stats(rewards: Iterable[float]) -> GroupStats:
    """GroupStats of one group's rewards under the policy above."""
    values = list(rewards)
    finite = [r for r in values if math.isfinite(r)]
    if not finite:
        return GroupStats(math.nan, math.nan, 0, len(values))
    mean = math.fsum(finite) / len(finite)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in finite) / len(finite))
    return GroupStats(mean, std, len(finite), len(values))


def reward_std(rewards: Iterable[float]) -> float:
    """Population std of a group's finite rewards (NaN when none is finite)."""
    return group_stats(rewards).std
