"""Sandbox metrics over every sandbox.start / sandbox.queue span of the run (start-up failures count too), and the
share of rollout time they take (a sandbox starts on its rollout's critical path, before the first token)."""

from __future__ import annotations

import numpy as np

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric


@metric("sandbox_init_failure_rate", "ratio", "sandbox.start with status ≠ ok / sandbox.start attempts")
def sandbox_init_failure_rate(ctx: MetricContext) -> MetricResult:
    starts = ctx.rows(K.SANDBOX_START)
    return (float((starts["status"] != "ok").mean()), "span") if len(starts) else None


def _durations(ctx: MetricContext, key: str, ok_only: bool) -> np.ndarray:
    spans = ctx.rows(key, "span")
    if ok_only:
        spans = spans[spans["status"] == "ok"]
    return (spans["t1"] - spans["t0"]).to_numpy()


def _percentile(values: np.ndarray, q: float) -> MetricResult:
    return (float(np.percentile(values, q)), "span") if len(values) else None


@metric("sandbox_start_p50_s", "s", "median create → ready of successful sandbox starts")
def sandbox_start_p50_s(ctx: MetricContext) -> MetricResult:
    return _percentile(_durations(ctx, K.SANDBOX_START, ok_only=True), 50)


@metric("sandbox_start_p99_s", "s", "99th percentile create → ready of successful sandbox starts")
def sandbox_start_p99_s(ctx: MetricContext) -> MetricResult:
    return _percentile(_durations(ctx, K.SANDBOX_START, ok_only=True), 99)


@metric("sandbox_start_max_s", "s", "slowest successful sandbox start")
def sandbox_start_max_s(ctx: MetricContext) -> MetricResult:
    return _percentile(_durations(ctx, K.SANDBOX_START, ok_only=True), 100)


@metric("sandbox_queue_p50_s", "s", "median wait for an admission slot")
def sandbox_queue_p50_s(ctx: MetricContext) -> MetricResult:
    return _percentile(_durations(ctx, K.SANDBOX_QUEUE, ok_only=False), 50)


@metric("sandbox_queue_p99_s", "s", "99th percentile wait for an admission slot")
def sandbox_queue_p99_s(ctx: MetricContext) -> MetricResult:
    return _percentile(_durations(ctx, K.SANDBOX_QUEUE, ok_only=False), 99)


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
