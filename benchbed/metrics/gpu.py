"""GPU metrics: how busy the GPUs were by NVML's utilization samples (`gpu.*` points), beside what the timers say.

A timer calls a trainer busy while its step computes; NVML says whether a kernel ran. The samples in the window are
those taken during its steps (each sample carries the step it fell in); a GPU's role comes from the run's
[resources] table (`gpu_roles`), so without one only `gpu_busy_ratio` is computed."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.cost import resources
from benchbed.metrics.registry import MetricResult, metric, metric_variants
from benchbed.metrics.trainer import trainer_ratio


def gpu_index(actor: str) -> int:
    """The GPU's index in a `gpu<i>` or `<node>.gpu<i>` actor."""
    return int(actor.rsplit("gpu", 1)[1])


def gpu_roles(indices: np.ndarray, table: dict | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(serves the trainer, serves the generator) per GPU index, from a [resources] table: colocated GPUs serve both;
    otherwise the first `trainer_gpus` indices are the trainer's and the next `generator_gpus` the generator's.
    None without a table (the roles are unknown)."""
    if not table:
        return None
    trainer, generator = int(table.get("trainer_gpus") or 0), int(table.get("generator_gpus") or 0)
    if table.get("colocated"):
        both = indices < max(trainer, generator)
        return both, both
    return indices < trainer, (indices >= trainer) & (indices < trainer + generator)


def _in_window(ctx: MetricContext, key: str) -> pd.DataFrame:
    """The key's samples taken during the window's steps."""
    return ctx.in_window_steps(ctx.rows(key, "point"))


def _utilization(ctx: MetricContext, role: int | None) -> MetricResult:
    """Mean utilization of the window's samples, of every GPU (`role` None) or of the trainer's (0) or the
    generator's (1) GPUs; None without samples or, for a role, without the run's [resources] table."""
    rows = _in_window(ctx, K.GPU_UTILIZATION)
    if not len(rows):
        return None
    values = rows["value"].to_numpy(dtype=float)
    if role is not None:
        indices = np.fromiter((gpu_index(a) for a in rows["actor"]), dtype=np.int64, count=len(rows))
        roles = gpu_roles(indices, resources(ctx))
        if roles is None or not roles[role].any():
            return None
        values = values[roles[role]]
    return float(values.mean()), "point"


metric_variants("ratio", _utilization, {
    "gpu_busy_ratio": ("mean NVML utilization of every sampled GPU over the window's steps", None),
    "trainer_gpu_busy_ratio": (
        "mean NVML utilization of the trainer's GPUs over the window's steps (roles from [resources]: the first "
        "trainer_gpus indices; colocated GPUs serve both)", 0,
    ),
    "generator_gpu_busy_ratio": (
        "mean NVML utilization of the generator's GPUs over the window's steps (the generator_gpus indices after "
        "the trainer's; colocated GPUs serve both)", 1,
    ),
})  # fmt: skip


@metric(
    "trainer_gpu_idle_gap",
    "ratio",
    "(1 − trainer_gpu_busy_ratio) − trainer_idle_ratio: the trainer GPUs' idle time that the timers count as work "
    "(positive), or GPU work during what the timers call waiting (negative)",
)
def trainer_gpu_idle_gap(ctx: MetricContext) -> MetricResult:
    busy, idle = _utilization(ctx, 0), trainer_ratio(ctx, K.TRAINER_WAIT)
    if busy is None or idle is None:
        return None
    return (1.0 - busy[0]) - idle[0], "point"


@metric("gpu_power_mean_w", "W", "mean power draw per sampled GPU over the window's steps")
def gpu_power_mean_w(ctx: MetricContext) -> MetricResult:
    rows = _in_window(ctx, K.GPU_POWER)
    return (float(rows["value"].mean()), "point") if len(rows) else None
