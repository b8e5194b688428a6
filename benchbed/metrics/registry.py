"""Metric registry: each metric is a pure function of a MetricContext, registered (`@metric`, in the one
`benchbed.registry.Registry` of the `benchbed.metrics` entry-point group) with its unit, and described
as PRESENTATION says (family, better direction, display order, headline, `ls` column): the one place every table,
list, watch default, gate and report section reads. PRESENTATION needs no metric function loaded (nor pandas with
them), so a gate or a history reads directions without them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbed.errors import BenchbedError
from benchbed.registry import Registry

if TYPE_CHECKING:
    from benchbed.metrics.context import MetricContext

# A metric function returns (value, source) or None when the trace cannot support it.
MetricResult = tuple[float, str] | None
MetricFn = Callable[["MetricContext"], MetricResult]


@dataclass(frozen=True)
class Presentation:
    """How a metric is shown and judged: its family, which way is better (None: neither, it is not gated), whether
    it is a headline figure, and its `benchbed ls` column heading."""

    family: str
    higher_is_better: bool | None
    headline: bool = False
    column: str = ""  # short heading of a `benchbed ls` column; empty: not a column there


OTHER_FAMILY = "other"
_T, _G, _S, _Q, _B, _L = "trainer", "generator / throughput", "staleness", "groups", "sandbox", "learning"
_H = "hardware"
# Display order is the order of this table; every registered metric is listed (registering one that is not fails).
PRESENTATION: dict[str, Presentation] = {
    "trainer_idle_ratio": Presentation(_T, higher_is_better=False, headline=True, column="idle"),
    "trainer_compute_ratio": Presentation(_T, higher_is_better=True),
    "trainer_weight_sync_ratio": Presentation(_T, higher_is_better=False),
    "trainer_checkpoint_ratio": Presentation(_T, higher_is_better=False),
    "trainer_other_ratio": Presentation(_T, higher_is_better=False),
    "step_time_mean_s": Presentation(_T, higher_is_better=False, headline=True),
    "startup_s": Presentation(_T, higher_is_better=False),
    "generator_utilization": Presentation(_G, higher_is_better=True, headline=True),
    "generator_paused_ratio": Presentation(_G, higher_is_better=False),
    "generator_admission_idle_ratio": Presentation(_G, higher_is_better=False, headline=True),
    "trainer_capacity_sps": Presentation(_G, higher_is_better=True),
    "trainer_throughput_sps": Presentation(_G, higher_is_better=True, headline=True, column="train sps"),
    "generator_throughput_sps": Presentation(_G, higher_is_better=True),
    "effective_generator_throughput_sps": Presentation(_G, higher_is_better=True, headline=True),
    "rate_gap": Presentation(_G, higher_is_better=None, headline=True),
    "staleness_mean": Presentation(_S, higher_is_better=False, headline=True, column="stale"),
    "staleness_p50": Presentation(_S, higher_is_better=False),
    "staleness_p99": Presentation(_S, higher_is_better=False),
    "staleness_max": Presentation(_S, higher_is_better=False, headline=True),
    "staleness_in_flight_mean": Presentation(_S, higher_is_better=False),
    "staleness_in_queue_mean": Presentation(_S, higher_is_better=False),
    "mixed_policy_fraction": Presentation(_S, higher_is_better=False),
    "dropped_stale_fraction": Presentation(_S, higher_is_better=False),
    "staleness_env_mean": Presentation(_S, higher_is_better=False),
    "staleness_env_max": Presentation(_S, higher_is_better=False),
    "off_policy_token_share": Presentation(_S, higher_is_better=False),
    "zero_adv_group_fraction": Presentation(_Q, higher_is_better=False, headline=True),
    "wasted_generation_fraction": Presentation(_Q, higher_is_better=False, headline=True),
    "group_straggler_ratio": Presentation(_Q, higher_is_better=False),
    "rollout_tail_share": Presentation(_Q, higher_is_better=False),
    "sandbox_init_failure_rate": Presentation(_B, higher_is_better=False, headline=True),
    "sandbox_start_p50_s": Presentation(_B, higher_is_better=False, headline=True),
    "sandbox_start_p99_s": Presentation(_B, higher_is_better=False, headline=True),
    "sandbox_start_max_s": Presentation(_B, higher_is_better=False),
    "sandbox_queue_p50_s": Presentation(_B, higher_is_better=False),
    "sandbox_queue_p99_s": Presentation(_B, higher_is_better=False),
    "sandbox_start_share": Presentation(_B, higher_is_better=False),
    "gpu_busy_ratio": Presentation(_H, higher_is_better=True),
    "trainer_gpu_busy_ratio": Presentation(_H, higher_is_better=True),
    "generator_gpu_busy_ratio": Presentation(_H, higher_is_better=True),
    "trainer_gpu_idle_gap": Presentation(_H, higher_is_better=False),
    "gpu_power_mean_w": Presentation(_H, higher_is_better=None),
    "target_reached": Presentation(_L, higher_is_better=True, headline=True),
    "steps_to_target": Presentation(_L, higher_is_better=False),
    "time_to_target_s": Presentation(_L, higher_is_better=False, headline=True),
    "gpu_hours_to_target": Presentation(_L, higher_is_better=False),
    "final_reward_mean": Presentation(_L, higher_is_better=True),
    "reward_gain": Presentation(_L, higher_is_better=True),
    "reward_gain_per_gpu_hour": Presentation(_L, higher_is_better=True),
    "discarded_fraction": Presentation(OTHER_FAMILY, higher_is_better=False),
    "response_truncated_fraction": Presentation(OTHER_FAMILY, higher_is_better=False),
    "partial_resumed_fraction": Presentation(OTHER_FAMILY, higher_is_better=None),
    "partial_buffered_per_step": Presentation(OTHER_FAMILY, higher_is_better=None),
    "gpu_hours_per_step": Presentation(OTHER_FAMILY, higher_is_better=False),
    "cost_per_step": Presentation(OTHER_FAMILY, higher_is_better=False),
    "cost_per_mtok": Presentation(OTHER_FAMILY, higher_is_better=False),
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
    description: str
    fn: MetricFn

    @property
    def presentation(self) -> Presentation:
        return PRESENTATION[self.name]

    @property
    def higher_is_better(self) -> bool | None:
        return PRESENTATION[self.name].higher_is_better


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
    return tuple(n for n in names if not directed or PRESENTATION[n].higher_is_better is not None)


def listed_columns() -> dict[str, str]:
    """Metric → `benchbed ls` column heading, in display order."""
    return {n: PRESENTATION[n].column for n in sorted(PRESENTATION, key=display_order) if PRESENTATION[n].column}


METRICS: dict[str, MetricDef] = {}
# name -> metric function; an outside package names its function (decorated with @metric) in `benchbed.metrics`
METRIC_FUNCTIONS: Registry[MetricFn] = Registry(
    "benchbed.metrics",
    "metric",
    (lambda fn: any(d.fn is fn for d in METRICS.values()), "a function decorated with benchbed.api.metric"),
)


def metric(
    name: str, unit: str, description: str, presentation: Presentation | None = None
) -> Callable[[MetricFn], MetricFn]:
    """Register a metric function under `name`, with its unit and what it computes. Its presentation and
    direction are the PRESENTATION entry of the same name; a metric from outside benchbed passes `presentation`
    (in one of FAMILIES), and is shown at its family's end."""

    def wrap(fn: MetricFn) -> MetricFn:
        if name in METRICS:
            raise BenchbedError(f"metric {name!r} registered twice")
        if presentation is not None and name not in PRESENTATION:
            if presentation.family not in FAMILIES:
                raise BenchbedError(f"metric {name!r}: family {presentation.family!r} is not one of {FAMILIES}")
            PRESENTATION[name] = presentation
        if name not in PRESENTATION:
            raise BenchbedError(f"metric {name!r} has no presentation (pass presentation=Presentation(...))")
        METRICS[name] = MetricDef(name, unit, description, fn)
        METRIC_FUNCTIONS.register(name, fn)
        return fn

    return wrap


def metric_variants(unit: str, fn: Callable[..., MetricResult], variants: dict[str, tuple[str, Any]]) -> None:
    """Register one metric per `variants` entry (name -> (description, argument)), each computing
    `fn(ctx, argument)`: one function serves a family of metrics that differ only in what they pick or summarise."""
    for name, (description, argument) in variants.items():
        metric(name, unit, description)(_bound(fn, argument))


def _bound(fn: Callable[..., MetricResult], argument: Any) -> MetricFn:
    """`fn` with its second argument fixed (a closure, so each variant is its own function in the registry)."""
    return lambda ctx: fn(ctx, argument)
