"""`benchbed plan`: the smallest (or largest) value of one spec field that meets a metric target, found by
simulation (a sweep, then bisection between the bracketing points) and shown beside the closed-form estimate
(derived for benchbed, not published: D2 generation-bound idle 1 − rate ratio and D1 staleness cap from Little's
law, D4 the synchronous straggler max)."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from benchbed.errors import SpecError
from benchbed.metrics import METRICS
from benchbed.metrics.context import MetricContext
from benchbed.sim import memory_needed, sim_params, simulate_spec
from benchbed.sim.config import MAX_CONCURRENCY, SimConfig
from benchbed.sim.draws import mean_latency, saturation_factor
from benchbed.spec import MAX_STEPS, ExperimentSpec, build_spec, set_dotted

VARIABLES = ("sim.concurrency", "workload.max_staleness")
_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, ">=": operator.ge, "<": operator.lt,
                                                   ">": operator.gt}  # fmt: skip
SWEEP_POINTS = 7


@dataclass(frozen=True)
class Target:
    metric: str
    op: str
    value: float

    def met(self, value: float | None) -> bool:
        return value is not None and _OPS[self.op](value, self.value)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def parse_target(text: str) -> Target:
    """'trainer_idle_ratio<=0.1' -> Target; the metric must be registered."""
    match = re.fullmatch(r"\s*([a-z_0-9]+)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*", text)
    if not match:
        raise SpecError(f"--target {text!r}: expected METRIC<=VALUE (or >=, <, >), e.g. 'trainer_idle_ratio<=0.1'")
    name, op, value = match.groups()
    if name not in METRICS:
        raise SpecError(f"--target {text!r}: unknown metric {name!r}; see docs/reference/metrics.md")
    return Target(name, op, float(value))


@dataclass
class PlanResult:
    """The answer, its check by simulation, the closed-form estimate and the simulated curve."""

    spec: str
    vary: str
    target: str
    answer: int | None
    answer_metric: float | None
    holds: bool
    closed_form: float | None
    closed_form_formula: str
    searched: list[int]
    curve: list[tuple[int, float | None]] = field(default_factory=list)
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["curve"] = [{"value": x, "metric": y} for x, y in self.curve]
        return data


def with_value(spec: ExperimentSpec, vary: str, value: int) -> ExperimentSpec:
    data = spec.model_dump(mode="json", exclude={"matrix", "variant"})
    set_dotted(data, vary, value)
    return build_spec(data, f"{spec.source} ({vary}={value})")


def simulate_metric(spec: ExperimentSpec, metric: str) -> float | None:
    """One metric of the simulated spec."""
    ctx = MetricContext(simulate_spec(spec), warmup_steps=spec.warmup_steps)
    result = METRICS[metric].fn(ctx)
    return None if result is None or not math.isfinite(result[0]) else float(result[0])


def _mean_rollout_s(cfg: SimConfig) -> float:
    """Mean seconds a slot is held per sample: LLM time (saturated) plus tool time."""
    mean = mean_latency(cfg.latency) * saturation_factor(cfg)
    if cfg.turns is not None:
        mean += cfg.turns.count * cfg.turns.env_s.mean
    return mean


def _expected_max_lognormal(mean: float, cv: float, n: int) -> float:
    """E[max of n] for a lognormal, median · exp(s · Φ⁻¹(1 − 1/(n + 1))) (the Gaussian quantile
    approximation to the maximum; it underestimates)."""
    from statistics import NormalDist

    s = math.sqrt(math.log1p(cv * cv))
    median = mean / math.sqrt(1 + cv * cv)
    return median * math.exp(s * NormalDist().inv_cdf(1 - 1 / (n + 1)))


def _window_train_step_time(spec: ExperimentSpec, cfg: SimConfig) -> float:
    """T of the closed form: train_step_time, or under train_time_drift its mean over the window's steps (the
    simulator gives step s, which trains after s - 1 versions, the factor of block (s - 1) // (every_pushes x
    update_weights_interval))."""
    drift = cfg.train_time_drift
    if drift is None:
        return cfg.train_step_time
    per_block, last = drift.every_pushes * cfg.update_weights_interval, len(drift.factors) - 1
    steps = range(spec.warmup_steps + 1, spec.workload.steps + 1) or range(1, spec.workload.steps + 1)
    return cfg.train_step_time * float(np.mean([drift.factors[min((s - 1) // per_block, last)] for s in steps]))


def closed_form(spec: ExperimentSpec, vary: str, target: Target) -> tuple[float | None, str]:
    """The closed-form value of `vary` meeting an idle target, or None with the reason in the formula text."""
    if target.metric != "trainer_idle_ratio" or target.op not in ("<=", "<"):
        return None, "closed form only for trainer_idle_ratio <= X"
    params = sim_params(spec)
    cfg = params.config
    B, busy = params.samples_per_step, _window_train_step_time(spec, cfg) + cfg.weight_sync_time
    W = _mean_rollout_s(cfg) * (cfg.oversample.factor if cfg.oversample and cfg.oversample.policy == "discard" else 1)
    idle = target.value
    if cfg.mode == "sync":
        if cfg.latency.dist != "lognormal":
            return None, "D4 needs a lognormal latency"
        wait = _expected_max_lognormal(mean_latency(cfg.latency), cfg.latency.cv, B)
        sync_idle = wait / (wait + busy)
        if vary == "sim.concurrency":
            if sync_idle > idle:
                return None, f"D4: synchronous idle E[max of B]/step = {sync_idle:.3f} at any C >= B"
            return float(B), f"D4: C = B = {B} (idle {sync_idle:.3f}); more slots do not help a synchronous step"
        return None, "D4: staleness has no effect in sync mode"
    needed_rate = (1 - idle) * B / busy  # trainer idle <= I*  <=>  delivered rate >= (1 - I*) · B / (T + S)
    if vary == "sim.concurrency":
        cap = (params.max_staleness + 1) * B / W
        if cfg.staleness_policy == "count" and cap < needed_rate:
            return None, f"D1: the staleness bound caps the rate at (η + 1) · B / W = {cap:.4g}/s < {needed_rate:.4g}/s"
        formula = f"D2: C >= (1 - {idle:g}) · B · W / (T + S) = (1 - {idle:g}) · {B} · {W:.4g} / {busy:.4g}"
        return needed_rate * W, formula
    if cfg.concurrency / W < needed_rate:
        rate = cfg.concurrency / W
        return None, f"D2: the generator's C / W = {rate:.4g}/s is below the {needed_rate:.4g}/s needed"
    return max(0.0, needed_rate * W / B - 1), (
        f"D1: (η + 1) · B / W >= (1 - {idle:g}) · B / (T + S)  =>  η >= (1 - {idle:g}) · {W:.4g} / {busy:.4g} - 1"
    )


def _check_range(spec: ExperimentSpec, vary: str, lo: int, hi: int) -> None:
    """Refuse a range whose largest point is out of bounds or cannot fit in memory, before the first simulation."""
    if vary == "sim.concurrency" and hi > MAX_CONCURRENCY:
        samples = spec.workload.steps * spec.workload.samples_per_step
        raise SpecError(
            f"--range {lo}:{hi}: sim.concurrency is at most {MAX_CONCURRENCY:,}; simulating {hi:,} generator slots "
            f"would need about {memory_needed(samples, hi) / 2**30:,.1f} GiB of memory"
        )
    if vary == "workload.max_staleness" and hi > MAX_STEPS:
        raise SpecError(f"--range {lo}:{hi}: workload.max_staleness is at most {MAX_STEPS:,}")
    try:
        sim_params(with_value(spec, vary, hi))
    except SpecError as exc:
        raise SpecError(f"--range {lo}:{hi}: at {vary} = {hi:,}: {exc}") from None


def plan(spec: ExperimentSpec, target: Target, vary: str, lo: int | None = None, hi: int | None = None,
         progress: Callable[[str], None] | None = None) -> PlanResult:  # fmt: skip
    """Sweep `vary` over [lo, hi], then bisect between the bracketing points for the boundary value."""
    if vary not in VARIABLES:
        raise SpecError(f"--vary {vary!r}: one of {', '.join(VARIABLES)}")
    params = sim_params(spec)
    estimate, formula = closed_form(spec, vary, target)
    if vary == "sim.concurrency":
        lo = params.group_size if lo is None else lo
        guess = 4 * max(params.config.concurrency, estimate or 0)  # the closed form is a fair centre for the sweep
        hi = max(lo + 1, min(int(guess), MAX_CONCURRENCY)) if hi is None else hi
    else:
        lo = 0 if lo is None else lo
        hi = max(lo + 1, min(64, 4 * int(math.ceil(estimate or 16)))) if hi is None else hi
    if not 0 <= lo < hi:
        raise SpecError(f"--range {lo}:{hi}: expected 0 <= LO < HI")
    _check_range(spec, vary, lo, hi)
    cache: dict[int, float | None] = {}

    def at(x: int) -> float | None:
        if x not in cache:
            if progress is not None:
                progress(f"{vary}={x}")
            cache[x] = simulate_metric(with_value(spec, vary, x), target.metric)
        return cache[x]

    grid = sorted({int(round(v)) for v in (np.geomspace(max(lo, 1), hi, SWEEP_POINTS) if lo >= 1 else
                                               [0, *np.geomspace(1, hi, SWEEP_POINTS - 1)])} | {lo, hi})  # fmt: skip
    met = [target.met(at(x)) for x in grid]
    answer, note = None, ""
    if not any(met):
        values = [(cache[x], x) for x in grid if cache[x] is not None]
        best = (min if target.op in ("<=", "<") else max)(values) if values else None
        note = f"no value in [{lo}, {hi}] meets {target}" + (
            f"; the best is {best[0]:.4g} at {best[1]}: another limit binds (staleness bound, trainer, stragglers)"
            if best
            else ""
        )
    elif met[0] and met[-1] and all(met):
        answer, note = lo, f"every value in [{lo}, {hi}] meets {target}"
    elif not met[0]:
        # smallest meeting value: bisect between the last failing and the first meeting grid points
        first = met.index(True)
        bad, good = grid[first - 1], grid[first]
        while good - bad > 1:
            mid = (bad + good) // 2
            bad, good = (bad, mid) if target.met(at(mid)) else (mid, good)
        answer, note = good, "smallest value meeting the target"
    else:
        last = len(met) - 1 - met[::-1].index(True)
        good, bad = grid[last], grid[last + 1]
        while bad - good > 1:
            mid = (bad + good) // 2
            good, bad = (mid, bad) if target.met(at(mid)) else (good, mid)
        answer, note = good, "largest value meeting the target"
    value = at(answer) if answer is not None else None
    return PlanResult(
        spec=spec.name, vary=vary, target=str(target), answer=answer, answer_metric=value,
        holds=answer is not None and target.met(value), closed_form=estimate, closed_form_formula=formula,
        searched=sorted(cache), curve=sorted(cache.items()), note=note,
    )  # fmt: skip
