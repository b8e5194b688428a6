"""Trainer metrics: where step time goes (idle, compute, weight sync, checkpoint, other), step time, startup."""

from __future__ import annotations

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric

_NAMED = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)


def _component_seconds(ctx: MetricContext, kind: str) -> dict[str, float]:
    """Seconds per trainer component over the window steps, for the components the trace measures at all."""
    out = {}
    for key in K.TRAINER_COMPONENTS:
        rows = ctx.rows(key, kind)
        if not len(rows):
            continue  # never logged: unknown, not zero
        rows = ctx.in_window_steps(rows)
        out[key] = float((rows["t1"] - rows["t0"]).sum()) if kind == "span" else float(rows["value"].sum())
    return out


def _compute_ratios(ctx: MetricContext) -> tuple[dict[str, float], str] | None:
    """Ratios of the measured components; `other` (the rest of the step) only when compute is measured too,
    since otherwise the rest would hide unmeasured compute. With every component measured they sum to 1."""
    kind = "span" if ctx.has_spans else "agg"
    steps = ctx.step_spans if kind == "span" else ctx.step_aggs
    if not len(steps):
        return None
    total = float((steps["t1"] - steps["t0"]).sum()) if kind == "span" else float(steps["value"].sum())
    seconds = _component_seconds(ctx, kind)
    if not seconds or total <= 0:
        return None
    named = {k: seconds[k] / total for k in _NAMED if k in seconds}
    named_sum = sum(named.values())
    if named_sum > 1.0 + 1e-9:
        ctx.warnings.append(
            f"trainer components add up to {named_sum:.3f} of step time (overlapping or inconsistent timers); "
            "ratios were scaled to sum to 1"
        )
        named = {k: v / named_sum for k, v in named.items()}
        named_sum = 1.0
    if K.TRAINER_COMPUTE in seconds or K.TRAINER_OTHER in seconds:
        named[K.TRAINER_OTHER] = max(0.0, 1.0 - named_sum)
    return named, kind


def trainer_ratios(ctx: MetricContext) -> tuple[dict[str, float], str] | None:
    """The trainer ratios over the window (see _compute_ratios), computed once per context."""
    return ctx.memo("trainer_ratios", lambda: _compute_ratios(ctx))


def _ratio(ctx: MetricContext, key: str) -> MetricResult:
    result = trainer_ratios(ctx)
    if result is None or key not in result[0]:
        return None
    return result[0][key], result[1]


@metric("trainer_idle_ratio", "ratio", False, "Σ trainer.wait / Σ trainer.step over the window")
def trainer_idle_ratio(ctx: MetricContext) -> MetricResult:
    return _ratio(ctx, K.TRAINER_WAIT)


@metric("trainer_compute_ratio", "ratio", True, "Σ trainer.compute / Σ trainer.step over the window")
def trainer_compute_ratio(ctx: MetricContext) -> MetricResult:
    return _ratio(ctx, K.TRAINER_COMPUTE)


@metric("trainer_weight_sync_ratio", "ratio", False, "Σ trainer.weight_sync / Σ trainer.step over the window")
def trainer_weight_sync_ratio(ctx: MetricContext) -> MetricResult:
    return _ratio(ctx, K.TRAINER_WEIGHT_SYNC)


@metric("trainer_checkpoint_ratio", "ratio", False, "Σ trainer.checkpoint / Σ trainer.step over the window")
def trainer_checkpoint_ratio(ctx: MetricContext) -> MetricResult:
    return _ratio(ctx, K.TRAINER_CHECKPOINT)


@metric("trainer_other_ratio", "ratio", False, "the rest of the step: 1 − the four other trainer ratios")
def trainer_other_ratio(ctx: MetricContext) -> MetricResult:
    return _ratio(ctx, K.TRAINER_OTHER)


@metric("step_time_mean_s", "s", False, "mean trainer.step duration over the window")
def step_time_mean_s(ctx: MetricContext) -> MetricResult:
    if ctx.has_spans:
        return float((ctx.step_spans["t1"] - ctx.step_spans["t0"]).mean()), "span"
    if len(ctx.step_aggs):
        return float(ctx.step_aggs["value"].mean()), "agg"
    return None


@metric("startup_s", "s", False, "time from run start to the start of the first trainer step")
def startup_s(ctx: MetricContext) -> MetricResult:
    spans = ctx.rows(K.TRAINER_STEP, "span")
    return (float(spans["t0"].min()), "span") if len(spans) else None


def compute_seconds_per_step(ctx: MetricContext) -> tuple[float, str] | None:
    """Mean trainer.compute seconds per window step."""
    kind = "span" if ctx.has_spans else "agg"
    seconds = _component_seconds(ctx, kind)
    n_steps = len(ctx.window_steps)
    if n_steps == 0 or seconds.get(K.TRAINER_COMPUTE, 0.0) <= 0:
        return None
    return seconds[K.TRAINER_COMPUTE] / n_steps, kind
