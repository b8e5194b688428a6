"""The one package a plug-in imports: the contract of each extension kind and the registry each kind is found in.

Every kind registers the same way: name an object in the kind's entry-point group (a package installed beside
benchbed), or call `<REGISTRY>.register(name, obj_or_"module:object")` in a running process. Each registry is a
`Registry[T]` (benchbed.registry): lazy import, a check of the object's kind, a 'did you mean' for a wrong name.

| kind            | contract                     | registry         | entry-point group          |
|-----------------|------------------------------|------------------|----------------------------|
| adapter         | Adapter (history(), ...)     | ADAPTERS         | benchbed.adapters          |
| launcher        | Launcher (+ options model)   | LAUNCHERS        | benchbed.launchers         |
| sandbox backend | SandboxBackend               | SANDBOX_BACKENDS | benchbed.sandbox_backends  |
| history source  | HistoryReader                | HISTORY_SOURCES  | benchbed.history_sources   |
| metric          | @metric (a MetricFn)         | METRIC_FUNCTIONS | benchbed.metrics           |
| study           | Study                        | STUDIES          | benchbed.studies           |
| lever set       | LeverSet                     | LEVER_SETS       | benchbed.levers            |

Beside the contracts, the types a plug-in builds or raises (Trace and its builder, ExperimentSpec, LaunchPlan, the
errors) and `keys`, the trace's key names: a plug-in imports benchbed only through this package and benchbed.adapterkit.
Names load on first use (PEP 562), so importing benchbed.api imports none of the kinds' modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchbed.lazy import lazy_getattr

if TYPE_CHECKING:
    from benchbed import keys
    from benchbed.adapter import ADAPTERS, Adapter, FigureDefinition, HistorySupport, LaunchPlan
    from benchbed.adapterkit.histories.history import History, HistoryError
    from benchbed.adapterkit.histories.reader import HISTORY_SOURCES, HistoryReader
    from benchbed.diagnosis.levers import LEVER_SETS, LeverSet
    from benchbed.errors import (
        AdapterError,
        BenchbedError,
        LaunchError,
        NotThisFrameworkError,
        RunFailedError,
        SpecError,
        TraceError,
    )
    from benchbed.launch.base import LAUNCHERS, Launcher, LauncherFlag, LaunchResult
    from benchbed.metrics.context import MetricContext
    from benchbed.metrics.registry import METRIC_FUNCTIONS, MetricResult, Presentation, metric
    from benchbed.registry import Registry
    from benchbed.sandbox.base import SandboxBackend
    from benchbed.sandbox.registry import BACKENDS as SANDBOX_BACKENDS
    from benchbed.sim.reproduce import STUDY_REGISTRY as STUDIES
    from benchbed.sim.reproduce import CaseRun, Row, Study
    from benchbed.spec.model import ExperimentSpec, format_validation_error
    from benchbed.trace import TRACE_FILENAME, Trace, TraceBuilder, TraceMeta, attrs_json, read_trace

_WHERE = {
    "Registry": "benchbed.registry",
    "BenchbedError": "benchbed.errors",
    "AdapterError": "benchbed.errors",
    "NotThisFrameworkError": "benchbed.errors",
    "LaunchError": "benchbed.errors",
    "RunFailedError": "benchbed.errors",
    "SpecError": "benchbed.errors",
    "TraceError": "benchbed.errors",
    "ExperimentSpec": "benchbed.spec",
    "format_validation_error": "benchbed.spec",
    "Trace": "benchbed.trace",
    "TraceBuilder": "benchbed.trace",
    "TraceMeta": "benchbed.trace",
    "TRACE_FILENAME": "benchbed.trace",
    "attrs_json": "benchbed.trace",
    "read_trace": "benchbed.trace",
    "keys": "benchbed.keys:",  # the module itself
    "Adapter": "benchbed.adapter",
    "ADAPTERS": "benchbed.adapter",
    "FigureDefinition": "benchbed.adapter",
    "HistorySupport": "benchbed.adapter",
    "LaunchPlan": "benchbed.adapter",
    "Launcher": "benchbed.launch.base",
    "LaunchResult": "benchbed.launch.base",
    "LauncherFlag": "benchbed.launch.base",
    "LAUNCHERS": "benchbed.launch.base",
    "SandboxBackend": "benchbed.sandbox.base",
    "SANDBOX_BACKENDS": "benchbed.sandbox.registry:BACKENDS",
    "History": "benchbed.adapterkit.histories.history",
    "HistoryError": "benchbed.adapterkit.histories.history",
    "HistoryReader": "benchbed.adapterkit.histories.reader",
    "HISTORY_SOURCES": "benchbed.adapterkit.histories.reader",
    "metric": "benchbed.metrics.registry",
    "MetricResult": "benchbed.metrics.registry",
    "Presentation": "benchbed.metrics.registry",
    "METRIC_FUNCTIONS": "benchbed.metrics.registry",
    "MetricContext": "benchbed.metrics.context",
    "Study": "benchbed.sim.reproduce",
    "CaseRun": "benchbed.sim.reproduce",
    "Row": "benchbed.sim.reproduce",
    "STUDIES": "benchbed.sim.reproduce:STUDY_REGISTRY",
    "LeverSet": "benchbed.diagnosis.levers",
    "LEVER_SETS": "benchbed.diagnosis.levers",
}
__all__ = [
    "ADAPTERS",
    "Adapter",
    "AdapterError",
    "BenchbedError",
    "CaseRun",
    "ExperimentSpec",
    "FigureDefinition",
    "HISTORY_SOURCES",
    "History",
    "HistoryError",
    "HistoryReader",
    "HistorySupport",
    "LAUNCHERS",
    "LEVER_SETS",
    "LaunchPlan",
    "LaunchError",
    "LaunchResult",
    "LauncherFlag",
    "Launcher",
    "LeverSet",
    "METRIC_FUNCTIONS",
    "MetricContext",
    "MetricResult",
    "NotThisFrameworkError",
    "Presentation",
    "Registry",
    "Row",
    "RunFailedError",
    "SANDBOX_BACKENDS",
    "STUDIES",
    "SandboxBackend",
    "SpecError",
    "Study",
    "TRACE_FILENAME",
    "Trace",
    "TraceBuilder",
    "TraceError",
    "TraceMeta",
    "attrs_json",
    "format_validation_error",
    "keys",
    "metric",
    "read_trace",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
