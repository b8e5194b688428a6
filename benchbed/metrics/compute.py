"""Every registered metric of a Trace (docs/reference/metrics.md), and a framework's own figures beside them:
importing this module registers the built-in metric functions (every module of benchbed.metrics, found by pkgutil,
so no list of them is kept by hand)."""

from __future__ import annotations

import importlib
import math
import pkgutil

import benchbed.metrics
from benchbed import keys as K
from benchbed.metrics.context import MetricContext
from benchbed.metrics.registry import METRIC_FUNCTIONS, METRICS, MetricDef  # noqa: F401  (MetricDef: re-exported)
from benchbed.record import MetricValue
from benchbed.trace import Trace

FRAMEWORK_PREFIX = "framework."


def _register_builtin_metrics() -> None:
    """Import every module of benchbed.metrics (pkgutil lists them sorted by name, which is the registration order
    METRICS keeps); their @metric decorators register the built-in metrics."""
    for module in pkgutil.iter_modules(benchbed.metrics.__path__, prefix="benchbed.metrics."):
        if module.name != __name__:
            importlib.import_module(module.name)


_register_builtin_metrics()


def framework_metrics(ctx: MetricContext) -> dict[str, MetricValue]:
    """A framework's own figures (`framework.<metric>` agg rows), averaged over the window, beside ours."""
    out = {}
    for key in ctx.by_key:
        if not key.startswith(FRAMEWORK_PREFIX):
            continue
        name = key[len(FRAMEWORK_PREFIX) :]
        rows = ctx.rows(key, "agg")
        windowed = ctx.in_window_steps(rows) if len(ctx.window_steps) else rows
        values = (windowed if len(windowed) else rows)["value"].dropna()
        if not len(values):
            continue
        definition = METRICS.get(name)
        out[f"framework_{name}"] = MetricValue(
            value=float(values.mean()),
            unit=definition.unit if definition else "",
            higher_is_better=definition.higher_is_better if definition else None,
            source="framework",
        )
    return out


def compute_metrics(trace: Trace, warmup_steps: int = 1, warnings: list[str] | None = None) -> dict[str, MetricValue]:
    """Every registered metric the trace supports; unsupported ones are absent (never 0)."""
    ctx = MetricContext(trace, warmup_steps=warmup_steps)
    steps = ctx.rows(K.TRAINER_STEP)["step"]
    if len(steps) and not len(ctx.window_steps):
        ctx.warnings.append(
            f"warmup_steps={warmup_steps} leaves out every trainer step of this run (the last is step "
            f"{int(steps.max())}): no windowed metric can be computed; use a smaller warmup_steps"
        )
    out: dict[str, MetricValue] = {}
    METRIC_FUNCTIONS.load_all()  # the metrics outside packages register (their @metric adds them to METRICS)
    for definition in list(METRICS.values()):
        result = definition.fn(ctx)
        if result is None or not math.isfinite(result[0]):
            continue
        out[definition.name] = MetricValue(
            value=result[0], unit=definition.unit, higher_is_better=definition.higher_is_better, source=result[1]
        )
    out.update(framework_metrics(ctx))
    if warnings is not None:
        warnings.extend(ctx.warnings)
    return out
