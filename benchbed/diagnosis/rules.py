"""The diagnosis rules: one regime per run and flags for waste, read from the run's metrics alone (pure).

Each rule names the metrics and thresholds that decide it, so a diagnosis states its evidence;
docs/reference/diagnosis.md explains every threshold. The rules are checked in order, the first that holds wins."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Regime = Literal[
    "weight_sync_bound",
    "sandbox_bound",
    "sandbox_start_bound",
    "trainer_bound",
    "straggler_bound",
    "long_tail_bound",
    "admission_bound",
    "generation_bound",
    "balanced",
    "unknown",
]
REGIMES: tuple[Regime, ...] = (
    "generation_bound",
    "admission_bound",
    "trainer_bound",
    "straggler_bound",
    "long_tail_bound",
    "sandbox_bound",
    "sandbox_start_bound",
    "weight_sync_bound",
    "balanced",
    "unknown",
)
FLAGS = (
    "zero_advantage_waste",
    "oversampling_discard",
    "stale_drops",
    "truncation",
    "partial_rollouts",
    "sandbox_failures",
    "stalled_learning",
    "gpu_idle_in_compute",
)

_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<": operator.lt}


@dataclass(frozen=True)
class Threshold:
    """`metric op value`, with the reason for the value (shown in docs/reference/diagnosis.md and the evidence)."""

    metric: str
    op: Literal[">=", "<"]
    value: float
    why: str

    def holds(self, metrics: Mapping[str, float]) -> bool | None:
        """Whether the run's value meets the threshold; None when the trace could not support the metric."""
        value = metrics.get(self.metric)
        return None if value is None else _OPS[self.op](value, self.value)


IDLE_HIGH = Threshold(
    "trainer_idle_ratio", ">=", 0.20, "the trainer waits a fifth of each step or more: the generator paces the run"
)
IDLE_LOW = Threshold(
    "trainer_idle_ratio", "<", 0.10, "the trainer waits under a tenth of each step: it paces the run itself"
)
SANDBOX_FAILING = Threshold(
    "sandbox_init_failure_rate",
    ">=",
    0.05,
    "one sandbox start in twenty fails: each failure is a retry or a lost rollout (case 3: 29% at 960, 0% at 96)",
)
STRAGGLING = Threshold(
    "group_straggler_ratio",
    ">=",
    4.0,
    "a group's slowest sample takes 4x its median: a lognormal latency with cv 0.5 gives about 2.3 at G=16",
)
SYNC_HEAVY = Threshold(
    "trainer_weight_sync_ratio",
    ">=",
    0.20,
    "a fifth of each step or more goes to the weight sync (and the generator pause it includes where the framework "
    "times them together): neither side trains on new weights meanwhile",
)
SANDBOX_STARTS_SLOW = Threshold(
    "sandbox_start_share",
    ">=",
    0.25,
    "a quarter of rollout time or more is spent queueing for and starting sandboxes, not generating",
)
LONG_TAIL = Threshold(
    "rollout_tail_share",
    ">=",
    0.50,
    "the last tenth of a step's rollouts takes half its rollout time or more (Seer, arXiv 2511.14617, §2: up to "
    "half); a lognormal latency with cv 0.5 gives about 0.40 at 64 samples",
)
GENERATOR_IDLE = Threshold(
    "generator_utilization", "<", 0.50, "most generator slots sit idle, waiting for the batch's last samples"
)
ADMISSION_HOLDS = Threshold(
    "generator_admission_idle_ratio",
    ">=",
    0.20,
    "admission (staleness bound, synchronous alternation, weight sync) holds back a fifth of the slot-time",
)
GENERATOR_BUSY = Threshold(
    "generator_utilization", ">=", 0.70, "the generator's slots are mostly running rollouts: it is saturated"
)

# Each flag holds when all of its thresholds hold.
FLAG_RULES: dict[str, tuple[Threshold, ...]] = {
    "zero_advantage_waste": (
        Threshold(
            "zero_adv_group_fraction",
            ">=",
            0.25,
            "a quarter of the groups have rewards that all agree and carry no gradient (case 2: 60%)",
        ),
    ),
    "oversampling_discard": (
        Threshold(
            "discarded_fraction",
            ">=",
            0.10,
            "a tenth of the finished samples are discarded unused by oversampling (case 1: up to 60%)",
        ),
    ),
    "stale_drops": (
        Threshold("dropped_stale_fraction", ">=", 0.05, "one finished sample in twenty is dropped for being too stale"),
    ),
    "truncation": (
        Threshold(
            "response_truncated_fraction",
            ">=",
            0.10,
            "a tenth of the responses hit the length cap: the cap, not the task, ends them",
        ),
    ),
    "partial_rollouts": (
        Threshold(
            "partial_resumed_fraction",
            ">=",
            0.10,
            "a tenth of the trained samples were resumed from the partial-rollout buffer (case 4: 76%)",
        ),
    ),
    "sandbox_failures": (SANDBOX_FAILING,),
    "stalled_learning": (
        Threshold(
            "reward_gain",
            "<",
            0.01,
            "the training reward's last quarter is within 0.01 of its first: a "
            "reward in [0, 1] (accuracy, pass rate) has stopped rising",
        ),
        Threshold(
            "staleness_mean",
            ">=",
            1.0,
            "trained samples are a policy version or more behind on average: "
            "off-policy samples can stall learning (verl fully_async's and AReaL's staleness ablations)",
        ),
    ),
    "gpu_idle_in_compute": (
        Threshold(
            "trainer_gpu_idle_gap",
            ">=",
            0.2,
            "the trainer's GPUs ran no kernel for a fifth of the window or more beyond the time its timers call "
            "waiting: what the timers count as compute includes host work (data loading, resharding, collective "
            "waits), so the run is less busy than its trainer ratios say",
        ),
    ),
}


@dataclass(frozen=True)
class Evidence:
    """One metric that decided the diagnosis: its value, the threshold, and on which side of it the run lies."""

    metric: str
    value: float
    threshold: float
    direction: Literal["above", "below"]
    why: str
    role: str  # "regime", or the flag it raised


@dataclass
class Prediction:
    """The effect of a lever in a simulation calibrated from the run (or the run's own simulator spec)."""

    metric: str
    from_: float
    to: float
    at: int
    basis: str

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "from": self.from_, "to": self.to, "at": self.at, "basis": self.basis}

    def sentence(self, field_name: str) -> str:
        return f"{self.basis}: {self.metric} {self.from_:.2f} → {self.to:.2f} at {field_name}={self.at}"


@dataclass
class Lever:
    """A spec field to change, which way, and (when computed) the predicted effect."""

    field: str
    direction: Literal["increase", "decrease", "enable", "set"]
    why: str
    to: Any = None
    predicted: Prediction | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["predicted"] = self.predicted.as_json() if self.predicted else None
        return data


@dataclass
class Diagnosis:
    """A run's regime, its waste flags, the evidence, the levers and what the trace could not tell."""

    regime: Regime
    flags: list[str]
    evidence: list[Evidence]
    levers: list[Lever] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "flags": list(self.flags),
            "evidence": [asdict(e) for e in self.evidence],
            "levers": [lever.as_json() for lever in self.levers],
            "uncertain": list(self.uncertain),
        }

    def headline(self) -> str:
        """One line: the regime, what decided it and the waste flags."""
        if self.regime == "unknown":
            return "cannot tell: " + "; ".join(self.uncertain)
        decided = ", ".join(dict.fromkeys(f"{e.metric} {e.value:.2f}" for e in self.evidence if e.role == "regime"))
        text = self.regime.replace("_", "-")
        text += f" ({decided})" if decided else ""
        if self.flags:
            text += "; " + ", ".join(flag.replace("_", " ") for flag in self.flags)
        if self.uncertain:
            text += " [uncertain: " + "; ".join(self.uncertain) + "]"
        return text


_REGIME_METRICS = (
    "trainer_idle_ratio",
    "generator_utilization",
    "generator_admission_idle_ratio",
    "group_straggler_ratio",
)


def _evidence(rule: Threshold, metrics: Mapping[str, float], role: str) -> Evidence:
    value = metrics[rule.metric]
    return Evidence(rule.metric, value, rule.value, "above" if value >= rule.value else "below", rule.why, role)


def _regime(metrics: Mapping[str, float]) -> tuple[Regime, list[Threshold]]:
    """The first rule that holds, with the thresholds that decided it."""
    if IDLE_HIGH.holds(metrics) is None:
        return "unknown", []
    if SYNC_HEAVY.holds(metrics):
        return "weight_sync_bound", [SYNC_HEAVY]
    if IDLE_HIGH.holds(metrics):
        if SANDBOX_FAILING.holds(metrics):
            return "sandbox_bound", [IDLE_HIGH, SANDBOX_FAILING]
        if SANDBOX_STARTS_SLOW.holds(metrics):
            return "sandbox_start_bound", [IDLE_HIGH, SANDBOX_STARTS_SLOW]
        if STRAGGLING.holds(metrics) and GENERATOR_IDLE.holds(metrics):
            return "straggler_bound", [IDLE_HIGH, STRAGGLING, GENERATOR_IDLE]
        if LONG_TAIL.holds(metrics):
            return "long_tail_bound", [IDLE_HIGH, LONG_TAIL]
        if ADMISSION_HOLDS.holds(metrics):
            return "admission_bound", [IDLE_HIGH, ADMISSION_HOLDS]
        decided = [IDLE_HIGH] + ([GENERATOR_BUSY] if GENERATOR_BUSY.holds(metrics) is not None else [])
        return "generation_bound", decided
    if IDLE_LOW.holds(metrics):
        return "trainer_bound", [IDLE_LOW]
    return "balanced", [IDLE_HIGH, IDLE_LOW]


def _uncertain(regime: Regime, metrics: Mapping[str, float]) -> list[str]:
    """What the trace could not support that would have told regimes apart."""
    if regime == "unknown":
        return ["no trainer_idle_ratio: the trace has no trainer wait, so the pacing side is unknown"]
    missing = [name for name in _REGIME_METRICS if name not in metrics]
    if regime not in ("generation_bound", "balanced") or not missing:
        return []
    return [
        f"no {name}: "
        + {
            "generator_utilization": "generator saturation cannot be confirmed",
            "generator_admission_idle_ratio": "admission-bound cannot be told from generation-bound",
            "group_straggler_ratio": "straggler-bound cannot be told from generation-bound",
            "trainer_idle_ratio": "",
        }[name]
        for name in missing
    ]


def diagnose_metrics(metrics: Mapping[str, float]) -> Diagnosis:
    """The diagnosis of a run from its metric values (name -> value); levers are added by `levers.levers_for`."""
    regime, decided = _regime(metrics)
    flags = [
        name for name, rules in FLAG_RULES.items()
        if all(rule.holds(metrics) for rule in rules) and not (regime == "sandbox_bound" and name == "sandbox_failures")
    ]  # fmt: skip
    evidence = [_evidence(rule, metrics, "regime") for rule in decided]
    evidence += [_evidence(rule, metrics, name) for name in flags for rule in FLAG_RULES[name]]
    return Diagnosis(regime=regime, flags=flags, evidence=evidence, uncertain=_uncertain(regime, metrics))
