"""Partial-rollout and response-cap metrics: environment-state staleness, resumed samples, buffered partials."""

from __future__ import annotations

import json

import numpy as np

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric


def env_staleness(ctx: MetricContext) -> np.ndarray | None:
    """Per trained sample: versions between the policy that made its environment state and the one that resumed
    from it (attrs `staleness_env`; 0 for a sample never resumed). None if the trace records no resumes."""

    def compute() -> np.ndarray | None:
        trained = ctx.trained_in_window
        attrs = trained["attrs"]
        resumed = attrs.str.contains('"staleness_env"', regex=False).to_numpy()
        if not len(trained) or not ctx.rollouts["attrs"].str.contains('"staleness_env"', regex=False).any():
            return None
        values = np.zeros(len(trained))
        values[resumed] = [json.loads(text)["staleness_env"] for text in attrs[resumed]]
        return values

    return ctx.memo("staleness_env", compute)


@metric("staleness_env_mean", "versions", "mean over trained samples of the resumed environment state's age")
def staleness_env_mean(ctx: MetricContext) -> MetricResult:
    values = env_staleness(ctx)
    return (float(values.mean()), "span") if values is not None else None


@metric("staleness_env_max", "versions", "largest environment-state age among trained samples")
def staleness_env_max(ctx: MetricContext) -> MetricResult:
    values = env_staleness(ctx)
    return (float(values.max()), "span") if values is not None else None


@metric("partial_resumed_fraction", "ratio", "trained samples resumed from the partial-rollout buffer")
def partial_resumed_fraction(ctx: MetricContext) -> MetricResult:
    values = env_staleness(ctx)
    if values is None:
        return None
    resumed = ctx.trained_in_window["attrs"].str.contains('"resumes"', regex=False)
    return float(resumed.mean()), "span"


@metric("partial_buffered_per_step", "samples", "mean samples aborted into the partial buffer per step")
def partial_buffered_per_step(ctx: MetricContext) -> MetricResult:
    rows = ctx.in_window_steps(ctx.rows(K.SAMPLES_PARTIAL_BUFFERED, "agg"))
    return (float(rows["value"].mean()), "agg") if len(rows) else None


@metric(
    "off_policy_token_share",
    "ratio",
    "tokens of resumed requests' earlier segments / (those + tokens decoded), summed over the window's rounds",
)
def off_policy_token_share(ctx: MetricContext) -> MetricResult:
    """The share of a partial-rollout round's tokens made by an earlier policy, as slime's APRIL counts its
    off_policy_ratio, but weighing each round by its tokens (slime logs each round's ratio)."""
    off, decoded = ctx.agg_sum(K.SAMPLES_OFF_POLICY_TOKENS), ctx.agg_sum(K.SAMPLES_DECODED_TOKENS)
    if off is None or decoded is None or off + decoded <= 0:
        return None
    return off / (off + decoded), "agg"


@metric("response_truncated_fraction", "ratio", "finished samples whose response hit the length cap")
def response_truncated_fraction(ctx: MetricContext) -> MetricResult:
    cap = ctx.trace.meta.extra.get("max_response_tokens")
    finished = ctx.finished_in_window
    tokens = finished["response_tokens"].to_numpy() if len(finished) else np.empty(0)
    if not cap or not len(tokens) or (tokens < 0).any():
        return None
    return float((tokens >= cap).mean()), "span"
