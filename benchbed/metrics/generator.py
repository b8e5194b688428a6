"""Generator and throughput metrics: utilisation, pauses, production and consumption rates, rate gap."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric
from benchbed.metrics.trainer import compute_seconds_per_step


def merged_intervals(t0: np.ndarray, t1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of a set of intervals as sorted, disjoint (starts, ends)."""
    if len(t0) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(t0, kind="stable")
    starts, ends = t0[order], t1[order]
    running_end = np.maximum.accumulate(ends)
    # A new disjoint block starts where a start lies beyond every earlier end.
    new_block = np.empty(len(starts), dtype=bool)
    new_block[0] = True
    new_block[1:] = starts[1:] > running_end[:-1]
    block_ids = np.cumsum(new_block) - 1
    block_end = np.zeros(block_ids[-1] + 1)
    np.maximum.at(block_end, block_ids, ends)
    return starts[new_block], block_end


def covered_before(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time in `t`, how much of the disjoint sorted blocks (starts, ends) lies before it."""
    if len(starts) == 0:
        return np.zeros(len(t))
    lengths = ends - starts
    cumulative = np.concatenate([[0.0], np.cumsum(lengths)])
    i = np.searchsorted(starts, t, side="right") - 1
    inside = np.clip(t - starts[np.maximum(i, 0)], 0.0, lengths[np.maximum(i, 0)])
    return np.where(i < 0, 0.0, cumulative[np.maximum(i, 0)] + inside)


@metric(
    "generator_utilization",
    "ratio",
    "time-average of running rollouts / generator concurrency (a partial rollout's rollout.buffered spans, when it "
    "held no slot, are not running)",
)
def generator_utilization(ctx: MetricContext) -> MetricResult:
    concurrency = ctx.trace.meta.concurrency
    spans = ctx.rows(K.ROLLOUT, "span")
    if ctx.window is None or not concurrency or not len(spans):
        return None
    w0, w1 = ctx.window
    running = _overlap(spans, w0, w1) - _overlap(ctx.rows(K.ROLLOUT_BUFFERED, "span"), w0, w1)
    return float(running / (concurrency * (w1 - w0))), "span"


def _overlap(spans: pd.DataFrame, w0: float, w1: float) -> float:
    """Total seconds of the spans inside the window [w0, w1]."""
    inside = np.minimum(spans["t1"].to_numpy(), w1) - np.maximum(spans["t0"].to_numpy(), w0)
    return float(np.clip(inside, 0, None).sum())


PAUSED_DEFINITION = (
    "fraction of the window in which free generator slots (at least one group's worth) could not start work "
    "because admission held them back (staleness bound, synchronous alternation, weight sync): union of "
    "generator.paused spans / window (agg: Σ paused / Σ step)"
)
ADMISSION_IDLE_DEFINITION = (
    "slot-time lost to admission: ∫ free slots during generator.paused spans dt / (concurrency × window); "
    "utilisation + this + slots idle for other reasons = 1 (agg: Σ paused / Σ step, the whole generator paused)"
)


def _window_pauses(ctx: MetricContext) -> tuple[np.ndarray, np.ndarray] | None:
    """generator.paused spans clipped to the window and merged, or None without a window or without spans (none
    at all is no pause, when the trace says its producer models pauses: then the ratios are 0, not absent)."""
    spans = ctx.rows(K.GENERATOR_PAUSED, "span")
    if ctx.window is None or not (len(spans) or K.GENERATOR_PAUSED in ctx.trace.meta.modelled):
        return None
    w0, w1 = ctx.window
    return merged_intervals(np.clip(spans["t0"].to_numpy(), w0, w1), np.clip(spans["t1"].to_numpy(), w0, w1))


def _agg_paused_ratio(ctx: MetricContext) -> MetricResult:
    paused = ctx.agg_sum(K.GENERATOR_PAUSED)
    window = ctx.window_seconds
    if paused is None or window is None or window[0] <= 0:
        return None
    return min(1.0, paused / window[0]), "agg"


@metric("generator_paused_ratio", "ratio", PAUSED_DEFINITION)
def generator_paused_ratio(ctx: MetricContext) -> MetricResult:
    pauses = _window_pauses(ctx)
    if pauses is None:
        return _agg_paused_ratio(ctx)
    w0, w1 = ctx.window  # type: ignore[misc]
    return float((pauses[1] - pauses[0]).sum() / (w1 - w0)), "span"


@metric("generator_admission_idle_ratio", "ratio", ADMISSION_IDLE_DEFINITION)
def generator_admission_idle_ratio(ctx: MetricContext) -> MetricResult:
    pauses = _window_pauses(ctx)
    if pauses is None:
        return None if len(ctx.rows(K.GENERATOR_PAUSED, "span")) else _agg_paused_ratio(ctx)
    concurrency = ctx.trace.meta.concurrency
    spans = ctx.rows(K.ROLLOUT, "span")
    if not concurrency or not len(spans):
        return None
    starts, ends = pauses
    busy = _covered(starts, ends, spans) - _covered(starts, ends, ctx.rows(K.ROLLOUT_BUFFERED, "span"))
    w0, w1 = ctx.window  # type: ignore[misc]
    held_back = concurrency * float((ends - starts).sum()) - busy
    return max(0.0, held_back) / (concurrency * (w1 - w0)), "span"


def _covered(starts: np.ndarray, ends: np.ndarray, spans: pd.DataFrame) -> float:
    """Seconds of the spans that lie inside the merged intervals [starts, ends]."""
    inside = covered_before(starts, ends, spans["t1"].to_numpy()) - covered_before(starts, ends, spans["t0"].to_numpy())
    return float(inside.sum())


def samples_per_step(ctx: MetricContext) -> tuple[float, str] | None:
    trained = _trained_count(ctx)
    if trained is not None and len(ctx.window_steps):
        return trained[0] / len(ctx.window_steps), trained[1]
    if ctx.trace.meta.samples_per_step:
        return float(ctx.trace.meta.samples_per_step), "agg"
    return None


def _trained_count(ctx: MetricContext) -> tuple[float, str] | None:
    if len(ctx.rollouts):
        return float(len(ctx.trained_in_window)), "span"
    trained = ctx.agg_sum(K.SAMPLES_TRAINED)
    if trained is not None:
        return trained, "agg"
    if ctx.trace.meta.samples_per_step and len(ctx.window_steps):
        return float(ctx.trace.meta.samples_per_step * len(ctx.window_steps)), "agg"
    return None


def _divide(numerator: MetricResult, denominator: MetricResult, *, denominator_source: bool = False) -> MetricResult:
    """numerator / denominator, None where either is missing or the denominator is not positive; its source is the
    denominator's (`denominator_source`), or by default the one both share, else "agg"."""
    if numerator is None or denominator is None or denominator[0] <= 0:
        return None
    shared = denominator[1] if numerator[1] == denominator[1] else "agg"
    return numerator[0] / denominator[0], denominator[1] if denominator_source else shared


@metric("trainer_capacity_sps", "samples/s", "samples per step / mean compute time per step")
def trainer_capacity_sps(ctx: MetricContext) -> MetricResult:
    return _divide(samples_per_step(ctx), compute_seconds_per_step(ctx), denominator_source=True)


@metric("trainer_throughput_sps", "samples/s", "samples trained in the window / window")
def trainer_throughput_sps(ctx: MetricContext) -> MetricResult:
    return _divide(_trained_count(ctx), ctx.window_seconds)


def _finished_count(ctx: MetricContext, accepted_only: bool) -> tuple[float, str] | None:
    if len(ctx.rollouts):
        finished = ctx.finished_in_window
        if accepted_only:
            finished = finished[finished["status"] == "ok"]
        return float(len(finished)), "span"
    total = ctx.agg_sum(K.SAMPLES_ACCEPTED if accepted_only else K.SAMPLES_FINISHED)
    return None if total is None else (total, "agg")


@metric("generator_throughput_sps", "samples/s", "samples finished in the window / window")
def generator_throughput_sps(ctx: MetricContext) -> MetricResult:
    return _divide(_finished_count(ctx, accepted_only=False), ctx.window_seconds)


@metric(
    "effective_generator_throughput_sps", "samples/s",
    "samples finished and accepted for training / window",
)  # fmt: skip
def effective_generator_throughput_sps(ctx: MetricContext) -> MetricResult:
    return _divide(_finished_count(ctx, accepted_only=True), ctx.window_seconds)


@metric("rate_gap", "×", "effective_generator_throughput_sps / trainer_capacity_sps")
def rate_gap(ctx: MetricContext) -> MetricResult:
    return _divide(effective_generator_throughput_sps(ctx), trainer_capacity_sps(ctx))
