"""Metric registry: each metric is a pure function of a MetricContext, registered with unit and direction, and
presented as PRESENTATION says (family, display order, headline, `ls` column): the one place every table, list,
watch default and report section reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchbed.metrics.context import MetricContext

# A metric function returns (value, source) or None when the trace cannot support it.
MetricResult = tuple[float, str] | None
MetricFn = Callable[["MetricContext"], MetricResult]


@dataclass(frozen=True)
class Presentation:
    """How a metric is shown: its family, whether it is a headline figure, and its `benchbed ls` column heading."""

    family: str
    headline: bool = False
    column: str = ""  # short heading of a `benchbed ls` column; empty: not a column there


OTHER_FAMILY = "other"
_T, _G, _S, _Q, _B = "trainer", "generator / throughput", "staleness", "groups", "sandbox"
# Display order is the order of this table; every registered metric is listed (registering one that is not fails).
PRESENTATION: dict[str, Presentation] = {
    "trainer_idle_ratio": Presentation(_T, headline=True, column="idle"),
    "trainer_compute_ratio": Presentation(_T),
    "trainer_weight_sync_ratio": Presentation(_T),
    "trainer_checkpoint_ratio": Presentation(_T),
    "trainer_other_ratio": Presentation(_T),
    "step_time_mean_s": Presentation(_T, headline=True),
    "startup_s": Presentation(_T),
    "generator_utilization": Presentation(_G, headline=True),
    "generator_paused_ratio": Presentation(_G),
    "generator_admission_idle_ratio": Presentation(_G, headline=True),
    "trainer_capacity_sps": Presentation(_G),
    "trainer_throughput_sps": Presentation(_G, headline=True, column="train sps"),
    "generator_throughput_sps": Presentation(_G),
    "effective_generator_throughput_sps": Presentation(_G, headline=True),
    "rate_gap": Presentation(_G, headline=True),
    "staleness_mean": Presentation(_S, headline=True, column="stale"),
    "staleness_p50": Presentation(_S),
    "staleness_p99": Presentation(_S),
    "staleness_max": Presentation(_S, headline=True),
    "staleness_in_flight_mean": Presentation(_S),
    "staleness_in_queue_mean": Presentation(_S),
    "mixed_policy_fraction": Presentation(_S),
    "dropped_stale_fraction": Presentation(_S),
    "staleness_env_mean": Presentation(_S),
    "staleness_env_max": Presentation(_S),
    "zero_adv_group_fraction": Presentation(_Q, headline=True),
    "wasted_generation_fraction": Presentation(_Q, headline=True),
    "group_straggler_ratio": Presentation(_Q),
    "sandbox_init_failure_rate": Presentation(_B, headline=True),
    "sandbox_start_p50_s": Presentation(_B, headline=True),
    "sandbox_start_p99_s": Presentation(_B, headline=True),
    "sandbox_start_max_s": Presentation(_B),
    "sandbox_queue_p50_s": Presentation(_B),
    "sandbox_queue_p99_s": Presentation(_B),
    "discarded_fraction": Presentation(OTHER_FAMILY),
    "response_truncated_fraction": Presentation(OTHER_FAMILY),
    "partial_resumed_fraction": Presentation(OTHER_FAMILY),
    "partial_buffered_per_step": Presentation(OTHER_FAMILY),
    "gpu_hours_per_step": Presentation(OTHER_FAMILY),
    "cost_per_step": Presentation(OTHER_FAMILY),
    "cost_per_mtok": Presentation(OTHER_FAMILY),
}
FAMILIES: tuple[str, ...] = (*dict.fromkeys(p.family for p in PRESENTATION.values() if p.family != OTHER_FAMILY),
                             OTHER_FAMILY)  # fmt: skip
_ORDER = {name: i for i, name in enumerate(PRESENTATION)}
# Names the registry does not know (a framework's own figures) fall into a family by prefix.
_PREFIX_FAMILY = (("trainer_", _T), ("step_", _T), ("generator_", _G), ("staleness_", _S), ("sandbox_", _B),
                  ("group", _Q))  # fmt: skip


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    higher_is_better: bool | None
    description: str
    fn: MetricFn

    @property
    def presentation(self) -> Presentation:
        return PRESENTATION[self.name]


def family_of(name: str) -> str:
    """The family a metric is shown in (by prefix for names the registry does not know)."""
    if name in PRESENTATION:
        return PRESENTATION[name].family
    return next((family for prefix, family in _PREFIX_FAMILY if name.startswith(prefix)), OTHER_FAMILY)


def display_order(name: str) -> tuple[int, int, str]:
    """Sort key: family, then the registry's order, then unknown names alphabetically at the family's end."""
    return FAMILIES.index(family_of(name)), _ORDER.get(name, len(_ORDER)), name


def headline_metrics(directed: bool = False) -> tuple[str, ...]:
    """The headline metrics in display order; `directed`: only those with a better direction (they can be gated)."""
    names = sorted((n for n, p in PRESENTATION.items() if p.headline), key=display_order)
    if not directed:
        return tuple(names)
    if not METRICS:  # the directions live with the metric functions, which register when benchbed.metrics loads them
        raise RuntimeError("headline_metrics(directed=True): no metric is registered yet; use benchbed.metrics.METRICS "
                           "(which loads the metric functions) first")  # fmt: skip
    return tuple(n for n in names if METRICS[n].higher_is_better is not None)


def listed_columns() -> dict[str, str]:
    """Metric → `benchbed ls` column heading, in display order."""
    return {n: PRESENTATION[n].column for n in sorted(PRESENTATION, key=display_order) if PRESENTATION[n].column}


METRICS: dict[str, MetricDef] = {}


def metric(name: str, unit: str, higher_is_better: bool | None, description: str) -> Callable[[MetricFn], MetricFn]:
    """Register a metric function under `name` (one source of truth: the decorator)."""

    def wrap(fn: MetricFn) -> MetricFn:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        if name not in PRESENTATION:
            raise ValueError(f"metric {name!r} has no entry in the registry's PRESENTATION table")
        METRICS[name] = MetricDef(name, unit, higher_is_better, description, fn)
        return fn

    return wrap
