"""Trainer metrics: where step time goes (idle, compute, weight sync, checkpoint, other), step time, startup."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import MetricResult, metric, metric_variants

_NAMED = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)
OVERLAP_TOLERANCE = 1e-9  # named components may exceed the step by this fraction (float noise) before scaling
MAX_NAMED_STEPS = 10  # an overlap warning names at most this many steps


@dataclass(frozen=True)
class Breakdown:
    """Seconds per trainer step by component: the one derivation behind the trainer ratios and the report's
    step-breakdown plot, so that a plot and its ratio agree.

    `frame` is indexed by step, with a column per measured component key (never-logged ones are absent) and
    `step_s` (NaN for steps without a trainer.step row). Where the four named components exceed the step
    (overlapping timers) they are scaled to fill it (`overlap`: step -> Σ named / step) and `other`, the
    unexplained rest of the step, is 0; `other` is the rest of the step only when compute or other is
    measured (else it would hide unmeasured compute), and the logged trainer.other where the step is unknown."""

    frame: pd.DataFrame
    kind: str
    overlap: dict[int, float]


def _per_step(rows: pd.DataFrame, kind: str) -> pd.Series:
    rows = rows[rows["step"] >= 0]
    seconds = rows["t1"] - rows["t0"] if kind == "span" else rows["value"]
    return seconds.groupby(rows["step"]).sum()


def _breakdown(ctx: MetricContext) -> Breakdown | None:
    kinds = [k for k in ("span", "agg") if any(len(ctx.rows(key, k)) for key in K.TRAINER_COMPONENTS)]
    if not kinds:
        return None
    kind = kinds[0]  # spans win over agg rows
    parts = {key: _per_step(ctx.rows(key, kind), kind) for key in K.TRAINER_COMPONENTS if len(ctx.rows(key, kind))}
    step_kind = "span" if len(ctx.rows(K.TRAINER_STEP, "span")) else "agg"
    frame = pd.DataFrame({**parts, "step_s": _per_step(ctx.rows(K.TRAINER_STEP, step_kind), step_kind)}).sort_index()
    named_keys = [key for key in _NAMED if key in parts]
    named = frame[named_keys].fillna(0.0)
    total = named.sum(axis=1)
    step_s = frame["step_s"]
    over = step_s.notna() & (total > step_s * (1 + OVERLAP_TOLERANCE))  # a step timed 0 keeps 0 of its phases
    excess = (total - step_s).where(over, 0.0)
    if K.TRAINER_COMPUTE in named_keys:  # nested compute timers (verl forks whose `adv` wraps `ref`): the overlap
        absorbed = np.minimum(named[K.TRAINER_COMPUTE], excess)  # is compute counted twice; wait stays as measured
        named[K.TRAINER_COMPUTE] = named[K.TRAINER_COMPUTE] - absorbed
        excess = excess - absorbed
    contradictory = over & (excess > step_s * OVERLAP_TOLERANCE)  # compute cannot explain it: scale them all
    named = named.mul((step_s / named.sum(axis=1)).where(contradictory, 1.0), axis=0)
    frame[named_keys] = named
    if K.TRAINER_COMPUTE in parts or K.TRAINER_OTHER in parts:
        rest = (step_s - named.sum(axis=1)).clip(lower=0.0)
        logged = frame[K.TRAINER_OTHER] if K.TRAINER_OTHER in parts else pd.Series(0.0, index=frame.index)
        frame[K.TRAINER_OTHER] = rest.where(step_s.notna(), logged.fillna(0.0))
    ratio = (total / step_s)[over]
    frame.index = frame.index.astype("int64")
    return Breakdown(frame, kind, {int(k): float(v) for k, v in ratio.items()})


def step_breakdown(ctx: MetricContext) -> Breakdown | None:
    """The per-step breakdown of the whole trace (see Breakdown), computed once per context."""
    return ctx.memo("step_breakdown", lambda: _breakdown(ctx))


def _window_breakdown(ctx: MetricContext) -> tuple[pd.DataFrame, str] | None:
    """The breakdown's rows for the window steps that have a step time (once per context: it may warn)."""
    return ctx.memo("window_breakdown", lambda: _window_rows(ctx))


def _window_rows(ctx: MetricContext) -> tuple[pd.DataFrame, str] | None:
    result = step_breakdown(ctx)
    if result is None or not len(ctx.window_steps):
        return None
    frame = result.frame[result.frame.index.isin(ctx.window_steps) & result.frame["step_s"].notna()]
    over = {s: r for s, r in result.overlap.items() if s in set(frame.index)}
    if over:
        named = ", ".join(f"{s} ({r:.3f}×)" for s, r in list(over.items())[:MAX_NAMED_STEPS])
        more = f" and {len(over) - MAX_NAMED_STEPS} more" if len(over) > MAX_NAMED_STEPS else ""
        ctx.warnings.append(
            f"trainer components add up to {max(over.values()):.3f} of step time in {len(over)} step(s) (nested or "
            f"overlapping timers): the overlap is taken out of trainer.compute (all components are scaled to the "
            f"step only where compute is too small to hold it): steps {named}{more}"
        )
    return frame, result.kind


def _compute_ratios(ctx: MetricContext) -> tuple[dict[str, float], str] | None:
    """Σ component / Σ step over the window, for the components the breakdown has; with every component
    measured they sum to 1."""
    window = _window_breakdown(ctx)
    if window is None:
        return None
    frame, kind = window
    total = float(frame["step_s"].sum())
    if total <= 0:
        return None
    return {key: float(frame[key].fillna(0.0).sum()) / total for key in K.TRAINER_COMPONENTS if key in frame}, kind


def trainer_ratios(ctx: MetricContext) -> tuple[dict[str, float], str] | None:
    """The trainer ratios over the window (see _compute_ratios), computed once per context."""
    return ctx.memo("trainer_ratios", lambda: _compute_ratios(ctx))


def trainer_ratio(ctx: MetricContext, key: str) -> MetricResult:
    """The window's Σ `key` / Σ trainer.step (one of the step-breakdown components), or None without it."""
    result = trainer_ratios(ctx)
    if result is None or key not in result[0]:
        return None
    return result[0][key], result[1]


metric_variants("ratio", trainer_ratio, {
    "trainer_idle_ratio": ("Σ trainer.wait / Σ trainer.step over the window", K.TRAINER_WAIT),
    "trainer_compute_ratio": ("Σ trainer.compute / Σ trainer.step over the window", K.TRAINER_COMPUTE),
    "trainer_weight_sync_ratio": ("Σ trainer.weight_sync / Σ trainer.step over the window", K.TRAINER_WEIGHT_SYNC),
    "trainer_checkpoint_ratio": ("Σ trainer.checkpoint / Σ trainer.step over the window", K.TRAINER_CHECKPOINT),
    "trainer_other_ratio": ("the rest of the step: 1 − the four other trainer ratios", K.TRAINER_OTHER),
})  # fmt: skip


@metric("step_time_mean_s", "s", "mean trainer.step duration over the window")
def step_time_mean_s(ctx: MetricContext) -> MetricResult:
    if ctx.has_spans:
        return float((ctx.step_spans["t1"] - ctx.step_spans["t0"]).mean()), "span"
    if len(ctx.step_aggs):
        return float(ctx.step_aggs["value"].mean()), "agg"
    return None


@metric("startup_s", "s", "time from run start to the start of the first trainer step")
def startup_s(ctx: MetricContext) -> MetricResult:
    spans = ctx.rows(K.TRAINER_STEP, "span")
    return (float(spans["t0"].min()), "span") if len(spans) else None


def compute_seconds_per_step(ctx: MetricContext) -> tuple[float, str] | None:
    """Mean trainer.compute seconds per window step (from the step breakdown)."""
    window = _window_breakdown(ctx)
    if window is None or K.TRAINER_COMPUTE not in window[0]:
        return None
    seconds = float(window[0][K.TRAINER_COMPUTE].fillna(0.0).sum())
    return (seconds / len(ctx.window_steps), window[1]) if seconds > 0 else None
