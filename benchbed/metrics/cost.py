"""Cost metrics: GPU-hours and dollars per step, dollars per million trained tokens (spec [resources] prices)."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric
from benchbed.metrics.trainer import step_time_mean_s


def resources(ctx: MetricContext) -> dict[str, Any] | None:
    """The run's [resources] table, as the simulator or the pipeline put it in the trace metadata."""
    res = ctx.trace.meta.extra.get("resources")
    return res if isinstance(res, dict) else None


def gpu_counts(res: dict[str, Any]) -> tuple[int, int]:
    """(trainer, generator) GPUs billed; a colocated run bills its GPUs once."""
    trainer, generator = int(res.get("trainer_gpus") or 0), int(res.get("generator_gpus") or 0)
    return (max(trainer, generator), 0) if res.get("colocated") else (trainer, generator)


def dollars_per_hour(res: dict[str, Any]) -> float | None:
    """Trainer GPUs × their price + generator GPUs × theirs; None without a price."""
    base = res.get("price_per_gpu_hour")
    trainer_price = res.get("trainer_price_per_gpu_hour") or base
    generator_price = res.get("generator_price_per_gpu_hour") or base
    trainer, generator = gpu_counts(res)
    if (trainer and trainer_price is None) or (generator and generator_price is None):
        return None
    return trainer * (trainer_price or 0.0) + generator * (generator_price or 0.0)


def trained_tokens(ctx: MetricContext) -> float | None:
    """Prompt + response tokens trained on in the window: summed over the trained rollout rows when every one of
    them has counts, else the per-step `samples.trained_tokens` counts when every window step has one; else None."""
    trained = ctx.trained_in_window
    if len(trained):
        prompt, response = trained["prompt_tokens"].to_numpy(), trained["response_tokens"].to_numpy()
        if (prompt >= 0).all() and (response >= 0).all():
            return float(np.sum(prompt) + np.sum(response))
    per_step = ctx.in_window_steps(ctx.rows(K.SAMPLES_TRAINED_TOKENS, "agg"))
    if not len(per_step) or not np.isin(ctx.window_steps, per_step["step"].to_numpy()).all():
        return None
    return float(per_step["value"].sum())


def gpu_hours(ctx: MetricContext, seconds: MetricResult) -> MetricResult:
    """(trainer + generator GPUs) × `seconds` / 3600, with the seconds' source; None without GPU counts."""
    res = resources(ctx)
    if res is None or seconds is None or sum(gpu_counts(res)) == 0:
        return None
    return sum(gpu_counts(res)) * seconds[0] / 3600.0, seconds[1]


@metric("gpu_hours_per_step", "GPU-h", "(trainer + generator GPUs) × mean step time / 3600")
def gpu_hours_per_step(ctx: MetricContext) -> MetricResult:
    return gpu_hours(ctx, step_time_mean_s(ctx))


@metric("cost_per_step", "$", "Σ GPUs × price per GPU-hour × mean step time / 3600")
def cost_per_step(ctx: MetricContext) -> MetricResult:
    res, step = resources(ctx), step_time_mean_s(ctx)
    rate = dollars_per_hour(res) if res is not None else None
    if rate is None or step is None:
        return None
    return rate * step[0] / 3600.0, step[1]


@metric(
    "cost_per_mtok",
    "$/Mtok",
    "cost of the window / million trained tokens (prompt + response): summed over the trained rollout rows when "
    "each has token counts, else the per-step samples.trained_tokens counts covering every window step",
)
def cost_per_mtok(ctx: MetricContext) -> MetricResult:
    res, window, tokens = resources(ctx), ctx.window_seconds, trained_tokens(ctx)
    rate = dollars_per_hour(res) if res is not None else None
    if rate is None or window is None or not tokens:
        return None
    return rate * window[0] / 3600.0 / (tokens / 1e6), window[1]
