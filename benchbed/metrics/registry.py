"""Metric registry: each metric is a pure function of a MetricContext, registered with unit and direction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchbed.metrics.context import MetricContext

# A metric function returns (value, source) or None when the trace cannot support it.
MetricResult = tuple[float, str] | None
MetricFn = Callable[[MetricContext], MetricResult]


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    higher_is_better: bool | None
    description: str
    fn: MetricFn


METRICS: dict[str, MetricDef] = {}


def metric(name: str, unit: str, higher_is_better: bool | None, description: str) -> Callable[[MetricFn], MetricFn]:
    """Register a metric function under `name` (one source of truth: the decorator)."""

    def wrap(fn: MetricFn) -> MetricFn:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        METRICS[name] = MetricDef(name, unit, higher_is_better, description, fn)
        return fn

    return wrap
