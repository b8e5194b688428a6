"""Sample-level metrics: staleness, zero-advantage groups, wasted generation, group stragglers, the batch's tail."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.context import NOT_TRAINED_STATUSES, MetricContext
from benchbed.metrics.registry import MetricResult, metric, metric_variants

MAX_NAMED_ROWS = 10  # a warning about impossible versions names at most this many rows


def trained_versions(ctx: MetricContext) -> pd.DataFrame:
    """Trained samples in the window whose v_start and v_train are known and in order (v_start ≤ v_end ≤
    v_train where known); out-of-order rows are an adapter bug, left out with a warning naming them."""
    return ctx.memo("trained_versions", lambda: _ordered_versions(ctx))


def _ordered_versions(ctx: MetricContext) -> pd.DataFrame:
    r = ctx.trained_in_window
    r = r[(r["v_start"] >= 0) & (r["v_train"] >= 0)]
    has_end = r["v_end"] >= 0
    bad = (r["v_train"] < r["v_start"]) | (has_end & ((r["v_end"] < r["v_start"]) | (r["v_train"] < r["v_end"])))
    if bad.any():
        rows = r[bad]
        named = ", ".join(f"{i} (step {s})" for i, s in zip(rows.index[:MAX_NAMED_ROWS], rows["step"], strict=False))
        more = f" and {len(rows) - MAX_NAMED_ROWS} more" if len(rows) > MAX_NAMED_ROWS else ""
        ctx.warnings.append(
            f"{len(rows)} trained sample(s) have negative staleness (v_train < v_start, or v_end out of order), "
            f"an adapter bug; left out of the staleness metrics: trace rows {named}{more}"
        )
    return r[~bad]


def staleness_values(ctx: MetricContext) -> np.ndarray:
    """v_train − v_start per trained sample with versions in order (see trained_versions)."""
    r = trained_versions(ctx)
    return (r["v_train"] - r["v_start"]).to_numpy()


def _staleness_stat(ctx: MetricContext, stat: str) -> MetricResult:
    values = ctx.memo("staleness", lambda: staleness_values(ctx))
    if len(values):
        result = {
            "mean": np.mean, "p50": lambda v: np.percentile(v, 50), "p99": lambda v: np.percentile(v, 99),
            "max": np.max,
        }[stat](values)  # fmt: skip
        return float(result), "span"
    return None


metric_variants("versions", _staleness_stat, {
    "staleness_mean": ("mean of v_train − v_start over trained samples", "mean"),
    "staleness_p50": ("median of v_train − v_start over trained samples", "p50"),
    "staleness_p99": ("99th percentile of v_train − v_start over trained samples", "p99"),
    "staleness_max": ("maximum of v_train − v_start over trained samples", "max"),
})  # fmt: skip


def _with_end(ctx: MetricContext) -> pd.DataFrame:
    r = trained_versions(ctx)
    return r[r["v_end"] >= 0]


@metric("staleness_in_flight_mean", "versions", "mean v_end − v_start: weights changed during generation")
def staleness_in_flight_mean(ctx: MetricContext) -> MetricResult:
    r = _with_end(ctx)
    return (float((r["v_end"] - r["v_start"]).mean()), "span") if len(r) else None


@metric("staleness_in_queue_mean", "versions", "mean v_train − v_end: versions waited after finishing")
def staleness_in_queue_mean(ctx: MetricContext) -> MetricResult:
    r = _with_end(ctx)
    return (float((r["v_train"] - r["v_end"]).mean()), "span") if len(r) else None


@metric("mixed_policy_fraction", "ratio", "trained samples with v_end > v_start")
def mixed_policy_fraction(ctx: MetricContext) -> MetricResult:
    r = _with_end(ctx)
    return (float((r["v_end"] > r["v_start"]).mean()), "span") if len(r) else None


@metric("dropped_stale_fraction", "ratio", "samples dropped for staleness / samples finished")
def dropped_stale_fraction(ctx: MetricContext) -> MetricResult:
    finished = ctx.finished_in_window
    if len(finished):
        return float((finished["status"] == "dropped_stale").mean()), "span"
    dropped, total = ctx.agg_sum(K.SAMPLES_DROPPED_STALE), ctx.agg_sum(K.SAMPLES_FINISHED)
    return (dropped / total, "agg") if dropped is not None and total else None


@metric("discarded_fraction", "ratio", "finished samples discarded unused (oversampling) / finished")
def discarded_fraction(ctx: MetricContext) -> MetricResult:
    finished = ctx.finished_in_window
    return (float((finished["status"] == "discarded").mean()), "span") if len(finished) else None


@metric("wasted_generation_fraction", "ratio", "finished samples not trained on (any reason) / finished")
def wasted_generation_fraction(ctx: MetricContext) -> MetricResult:
    finished = ctx.finished_in_window
    if len(finished):
        return float(finished["status"].isin(NOT_TRAINED_STATUSES).mean()), "span"
    accepted, total = ctx.agg_sum(K.SAMPLES_ACCEPTED), ctx.agg_sum(K.SAMPLES_FINISHED)
    return (max(0.0, 1.0 - accepted / total), "agg") if accepted is not None and total else None


def _groups_in_window(ctx: MetricContext) -> pd.DataFrame:
    groups = ctx.rows(K.ROLLOUT_GROUP)
    if not len(groups):
        return groups
    timed = groups["t0"].notna()
    if ctx.window is not None and timed.all():
        t0, t1 = ctx.window
        return groups[(groups["t0"] > t0) & (groups["t0"] <= t1)]
    return ctx.in_window_steps(groups)


@metric("zero_adv_group_fraction", "ratio", "finished groups whose rewards all equal / finished groups")
def zero_adv_group_fraction(ctx: MetricContext) -> MetricResult:
    groups = _groups_in_window(ctx)
    if len(groups):
        return float((groups["value"].abs() < 1e-12).mean()), "span"
    finished = ctx.finished_in_window
    finished = finished[(finished["group"] != "") & finished["value"].notna()]
    if len(finished):
        spread = finished.groupby("group", observed=True)["value"].agg(["min", "max"])
        return float(((spread["max"] - spread["min"]).abs() < 1e-12).mean()), "span"
    zero, total = ctx.agg_sum(K.GROUPS_ZERO_ADV), ctx.agg_sum(K.GROUPS_FINISHED)
    return (zero / total, "agg") if zero is not None and total else None


@metric("group_straggler_ratio", "×", "mean over groups of max / median sample latency")
def group_straggler_ratio(ctx: MetricContext) -> MetricResult:
    finished = ctx.finished_in_window
    spans = finished[(finished["kind"] == "span") & (finished["group"] != "")]
    if not len(spans):
        return None
    latency = (spans["t1"] - spans["t0"]).rename("latency")
    stats = latency.groupby(spans["group"], observed=True).agg(["max", "median", "count"])
    stats = stats[(stats["count"] > 1) & (stats["median"] > 0)]
    return (float((stats["max"] / stats["median"]).mean()), "span") if len(stats) else None


TAIL_QUANTILE = 0.9  # the tail is the last tenth of a step's rollouts to finish (Seer, arXiv 2511.14617, §2)
MIN_TAIL_SAMPLES = 10  # a step needs this many timed rollouts for its last tenth to be one sample or more
TAIL_DEFINITION = (
    "mean over window steps of (last t1 − 90th percentile t1) / (last t1 − first t0) of the rollouts trained in "
    "the step: the share of the batch's rollout time its last tenth of rollouts takes alone"
)


@metric("rollout_tail_share", "ratio", TAIL_DEFINITION)
def rollout_tail_share(ctx: MetricContext) -> MetricResult:
    trained = ctx.trained_in_window
    spans = trained[(trained["kind"] == "span") & trained["t1"].notna()] if len(trained) else trained
    if not len(spans):
        return None
    per_step = spans.groupby("step")
    first, last = per_step["t0"].min(), per_step["t1"].max()
    tail = per_step["t1"].quantile(TAIL_QUANTILE)
    rollout = last - first
    keep = (per_step.size() >= MIN_TAIL_SAMPLES) & (rollout > 0)
    if not keep.any():
        return None
    return float(((last - tail) / rollout)[keep].mean()), "span"
