"""Learning metrics: steps, time and GPU-hours to a quality target, and reward gained per GPU-hour.

The target (benchbed.quality.Target) comes with the run: the spec's [quality] table or `ingest --target`, kept
in the trace metadata as `quality_target`. Time counts from the start of the run's first step, warmup included:
time to a target is time the run spent getting there."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.cost import gpu_counts, gpu_hours, resources
from benchbed.metrics.registry import MetricResult, metric, metric_variants
from benchbed.quality import Target, first_reaching


def target(ctx: MetricContext) -> Target | None:
    text = ctx.trace.meta.extra.get("quality_target")
    return Target.parse(text) if isinstance(text, str) and text else None


def quality_rows(ctx: MetricContext, key: str) -> pd.DataFrame:
    """The key's per-step values, one per step (the last logged), in step order."""
    rows = ctx.rows(key, "agg")
    rows = rows[rows["value"].notna()]
    return rows.drop_duplicates("step", keep="last").sort_values("step")


def step_end_times(ctx: MetricContext) -> tuple[dict[int, float], str] | None:
    """Seconds from the start of the first step to the end of each step: from trainer.step spans, else the
    running sum of the per-step trainer.step durations."""
    spans = ctx.rows(K.TRAINER_STEP, "span")
    if len(spans):
        origin = float(spans["t0"].min())
        ends = spans.groupby("step")["t1"].max() - origin
        return {int(k): float(v) for k, v in ends.items()}, "span"
    aggs = ctx.rows(K.TRAINER_STEP, "agg").drop_duplicates("step", keep="last").sort_values("step")
    if not len(aggs):
        return None
    ends = np.cumsum(aggs["value"].to_numpy(dtype=float))
    return dict(zip(aggs["step"].astype(int).tolist(), ends.tolist(), strict=True)), "agg"


def _reached(ctx: MetricContext) -> tuple[Target, int | None] | None:
    """(target, first step meeting it or None); None without a target or any value of its key."""

    def compute() -> tuple[Target, int | None] | None:
        wanted = target(ctx)
        if wanted is None:
            return None
        rows = quality_rows(ctx, wanted.key)
        if not len(rows):
            ctx.warnings.append(f"quality target {wanted}: the run logged no {wanted.key}; no learning metric")
            return None
        step = first_reaching(rows["step"].astype(int).tolist(), rows["value"].tolist(), wanted)
        if step is None:
            judged = rows["value"].rolling(wanted.window).mean()
            best = judged.max() if wanted.op == ">=" else judged.min()
            ctx.warnings.append(f"quality target {wanted}: not reached in the run (best {best:.4g}, over "
                                f"{len(rows)} logged value(s)); target_reached = 0")  # fmt: skip
        return wanted, step

    return ctx.memo("quality_reached", compute)


@metric("target_reached", "bool", "1 when a logged value of the target's key meets the quality target, else 0")
def target_reached(ctx: MetricContext) -> MetricResult:
    found = _reached(ctx)
    return None if found is None else (float(found[1] is not None), "agg")


@metric("steps_to_target", "steps", "the first step whose logged value meets the quality target")
def steps_to_target(ctx: MetricContext) -> MetricResult:
    found = _reached(ctx)
    return None if found is None or found[1] is None else (float(found[1]), "agg")


@metric("time_to_target_s", "s", "start of the first step -> end of the step first meeting the quality target")
def time_to_target_s(ctx: MetricContext) -> MetricResult:
    found, ends = _reached(ctx), step_end_times(ctx)
    if found is None or found[1] is None or ends is None or found[1] not in ends[0]:
        return None
    return ends[0][found[1]], ends[1]


@metric("gpu_hours_to_target", "GPU-h", "(trainer + generator GPUs) × time to the quality target / 3600")
def gpu_hours_to_target(ctx: MetricContext) -> MetricResult:
    return gpu_hours(ctx, time_to_target_s(ctx))


FINAL_SHARE = 0.25  # final_reward_mean averages the last quarter of the logged steps, reward_gain the first too


def _reward_figure(ctx: MetricContext, gain: bool) -> MetricResult:
    """Mean logged training reward over the last quarter of the steps (at least one step), minus that over the first
    quarter where `gain` (which needs two steps); None without enough steps."""
    rows = quality_rows(ctx, K.QUALITY_REWARD)
    if len(rows) < (2 if gain else 1):
        return None
    quarter = max(1, math.ceil(len(rows) * FINAL_SHARE))
    last = float(rows["value"].iloc[-quarter:].mean())
    return (last - float(rows["value"].iloc[:quarter].mean()) if gain else last), "agg"


metric_variants("reward", _reward_figure, {
    "final_reward_mean": (
        "mean training reward over the last quarter of the logged steps (at least one): what the run learned", False,
    ),
    "reward_gain": (
        "final_reward_mean minus the mean training reward over the first quarter of the logged steps: what was "
        "learned", True,
    ),
})  # fmt: skip


@metric("reward_gain_per_gpu_hour", "1/GPU-h",
        "(last - first logged training reward) / ((trainer + generator GPUs) × the run's time / 3600)")  # fmt: skip
def reward_gain_per_gpu_hour(ctx: MetricContext) -> MetricResult:
    res, ends, rows = resources(ctx), step_end_times(ctx), quality_rows(ctx, K.QUALITY_REWARD)
    if res is None or ends is None or len(rows) < 2 or sum(gpu_counts(res)) == 0:
        return None
    hours = sum(gpu_counts(res)) * max(ends[0].values()) / 3600.0
    if not hours > 0:
        return None
    return float(rows["value"].iloc[-1] - rows["value"].iloc[0]) / hours, ends[1]
