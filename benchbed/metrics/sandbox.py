"""Sandbox metrics over every sandbox.start / sandbox.queue span of the run (start-up failures count too), and the
share of rollout time they take (a sandbox starts on its rollout's critical path, before the first token)."""

from __future__ import annotations

import numpy as np

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric, metric_variants


@metric("sandbox_init_failure_rate", "ratio", "sandbox.start with status ≠ ok / sandbox.start attempts")
def sandbox_init_failure_rate(ctx: MetricContext) -> MetricResult:
    starts = ctx.rows(K.SANDBOX_START)
    return (float((starts["status"] != "ok").mean()), "span") if len(starts) else None


def _durations(ctx: MetricContext, key: str, ok_only: bool) -> np.ndarray:
    spans = ctx.rows(key, "span")
    if ok_only:
        spans = spans[spans["status"] == "ok"]
    return (spans["t1"] - spans["t0"]).to_numpy()


def _percentile(ctx: MetricContext, which: tuple[str, float]) -> MetricResult:
    """The q-th percentile of the `key` spans' durations, `which` = (key, q); of the successful ones for starts."""
    key, q = which
    values = _durations(ctx, key, ok_only=key == K.SANDBOX_START)
    return (float(np.percentile(values, q)), "span") if len(values) else None


metric_variants("s", _percentile, {
    "sandbox_start_p50_s": ("median create → ready of successful sandbox starts", (K.SANDBOX_START, 50)),
    "sandbox_start_p99_s": ("99th percentile create → ready of successful sandbox starts", (K.SANDBOX_START, 99)),
    "sandbox_start_max_s": ("slowest successful sandbox start", (K.SANDBOX_START, 100)),
    "sandbox_queue_p50_s": ("median wait for an admission slot", (K.SANDBOX_QUEUE, 50)),
    "sandbox_queue_p99_s": ("99th percentile wait for an admission slot", (K.SANDBOX_QUEUE, 99)),
})  # fmt: skip


START_SHARE_DEFINITION = (
    "Σ (sandbox.queue + sandbox.start) seconds / Σ rollout span seconds over the run: the share of rollout time "
    "spent waiting for and starting sandboxes, every attempt and retry included"
)


@metric("sandbox_start_share", "ratio", START_SHARE_DEFINITION)
def sandbox_start_share(ctx: MetricContext) -> MetricResult:
    waited = _durations(ctx, K.SANDBOX_QUEUE, ok_only=False).sum() + _durations(ctx, K.SANDBOX_START, False).sum()
    rollouts = ctx.rows(K.ROLLOUT, "span")
    total = float((rollouts["t1"] - rollouts["t0"]).sum()) if len(rollouts) else 0.0
    if not len(ctx.rows(K.SANDBOX_START, "span")) or total <= 0:
        return None
    return min(1.0, float(waited) / total), "span"
