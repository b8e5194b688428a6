"""The metrics of docs/reference/metrics.md as pure functions of a Trace: no file reading, no plotting.

The metric functions (and pandas with them) load on first use of a name below (PEP 562), so what reads only the
registry's presentation table (`benchbed ls`, the store catalog) starts without them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchbed.metrics.compute import (
        FRAMEWORK_PREFIX,
        METRICS,
        MetricContext,
        MetricDef,
        compute_metrics,
        framework_metrics,
    )

__all__ = ["FRAMEWORK_PREFIX", "METRICS", "MetricDef", "MetricContext", "compute_metrics", "framework_metrics"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from benchbed.metrics import compute

        return getattr(compute, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
