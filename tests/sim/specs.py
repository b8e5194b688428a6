"""Simulator specs built from a `[sim]` table and workload figures, and the lognormal the simulator draws latencies
from (mean and coefficient of variation), shared by the simulator's closed-form tests."""

from __future__ import annotations

import math
from typing import Any

from scipy import stats

from benchbed.spec import ExperimentSpec, build_spec


def make_spec(sim: dict[str, Any], prompts: int = 4, group: int = 1, staleness: int = 0, steps: int = 100,
              resources: dict[str, Any] | None = None, **workload: Any) -> ExperimentSpec:  # fmt: skip
    """A spec of the `sim` adapter named `t`; `workload` adds workload fields."""
    return build_spec(
        {
            "name": "t",
            "adapter": "sim",
            "workload": {
                "prompts_per_step": prompts,
                "group_size": group,
                "max_staleness": staleness,
                "steps": steps,
                **workload,
            },
            "resources": resources or {},
            "sim": sim,
        }  # fmt: skip
    )


def lognormal(mean: float, cv: float) -> stats.rv_continuous:
    """The lognormal with this mean and coefficient of variation."""
    sigma2 = math.log1p(cv * cv)
    return stats.lognorm(s=math.sqrt(sigma2), scale=math.exp(math.log(mean) - sigma2 / 2))
