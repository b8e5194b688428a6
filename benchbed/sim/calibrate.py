"""`benchbed calibrate`: fit a simulator spec to a stored run's trace, saying where each parameter came from.

The fit: rollout latency (the empirical distribution, plus a lognormal fit with its Kolmogorov-Smirnov
distance), batch and group size, trainer compute and weight-sync seconds per step, generator concurrency,
per-prompt pass rates (Beta by moments, corrected for the binomial noise of a group of G), mode, staleness
policy and bound. A calibrated spec is a normal spec: `--set sim.concurrency=...` asks "what if"."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomlkit

from benchbed import keys as K
from benchbed.errors import BenchbedError
from benchbed.metrics import METRICS
from benchbed.metrics.context import FINISHED_STATUSES, MetricContext
from benchbed.metrics.registry import headline_metrics
from benchbed.record import RunRecord
from benchbed.spec import build_spec
from benchbed.store import read_record
from benchbed.trace import Trace, read_trace

EMPIRICAL_POINTS = 200  # quantiles kept of the observed latency distribution
DEFAULT_LATENCY_S = 60.0
MIN_STALENESS_SAMPLES = 200  # trained samples below which mean staleness is too coarse to compare


@dataclass
class Param:
    """One calibrated value and where it came from."""

    value: Any
    source: str


@dataclass
class Calibration:
    """The fitted spec as (table, key) -> Param, what the trace lacked, and the latency fit."""

    name: str
    params: dict[tuple[str, str], Param] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    lognormal: dict[str, float] | None = None
    observed: dict[str, float] = field(default_factory=dict)  # the run's headline metrics, for the round trip

    def set(self, table: str, key: str, value: Any, source: str) -> None:
        self.params[(table, key)] = Param(value, source)

    def assume(self, table: str, key: str, value: Any, why: str) -> None:
        self.params[(table, key)] = Param(value, f"ASSUMED: {why}")
        self.missing.append(f"{table}.{key}: {why}; assumed {value!r}")

    def spec_data(self) -> dict[str, Any]:
        """The spec as plain data, ready for build_spec."""
        data: dict[str, Any] = {"name": self.name, "adapter": "sim"}
        for (table, key), param in self.params.items():
            node = data if table == "" else data.setdefault(table, {})
            node[key] = param.value
        return data

    def to_toml(self) -> str:
        """The spec as TOML (tomlkit: every string, key and newline escaped) with one comment per parameter
        saying where it came from."""
        doc = tomlkit.document()
        doc.add(tomlkit.comment(f"Simulator spec calibrated by `benchbed calibrate` from {_one_line(self.name)}."))
        doc.add(tomlkit.comment("Every parameter says where it came from; ASSUMED ones were not in the trace."))
        if self.lognormal:
            fit = self.lognormal
            doc.add(tomlkit.comment(
                f"Rollout latency lognormal fit: mean {fit['mean']:.4g} s, cv {fit['cv']:.3g}, "
                f"Kolmogorov-Smirnov distance {fit['ks']:.3f} over {int(fit['n'])} samples "
                f"(the spec keeps the empirical distribution)."
            ))  # fmt: skip
        doc.add("name", self.name)
        doc.add("adapter", "sim")
        for table in ("", "workload", "resources", "sim"):
            entries = [(key, p) for (t, key), p in self.params.items() if t == table]
            if not entries:
                continue
            node = doc if table == "" else tomlkit.table()
            subtables = []
            for key, param in entries:
                if isinstance(param.value, dict) and "values" in param.value:
                    subtables.append((key, param))  # a long list: its own table, one value a line
                    continue
                node.add(key, _commented(_item(param.value), param.source))
            for key, param in subtables:
                sub = _commented(tomlkit.table(), param.source)
                for name, value in param.value.items():
                    sub.add(name, _item(value))
                sub["values"].multiline(True)
                node.add(key, sub)
            if table:
                doc.add(table, node)
        return tomlkit.dumps(doc)


def _one_line(text: str) -> str:
    """A comment holds one line of printable text: line breaks become spaces, control characters `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", " ".join(str(text).splitlines()))


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # what a TOML comment may not hold


def _item(value: Any) -> Any:
    """A tomlkit item; tables (a distribution), also inside lists, are written inline, beside their comment."""
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update({k: _item(v) for k, v in value.items()})
        return inline
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(_item(v) for v in value)
        return array
    return tomlkit.item(value)


def _commented(item: Any, source: str) -> Any:
    """`item` with `  # source` after it."""
    item.comment(_one_line(source))
    item.trivia.comment_ws = "  "
    return item


def lognormal_fit(values: np.ndarray) -> dict[str, float]:
    """Maximum-likelihood lognormal (as mean and cv) and its Kolmogorov-Smirnov distance to the data."""
    logs = np.log(values)
    mu, sigma = float(logs.mean()), float(logs.std())
    x = np.sort(logs)
    n = len(x)
    if sigma > 0:
        cdf = 0.5 * (1 + np.vectorize(math.erf)((x - mu) / (sigma * math.sqrt(2))))
        ks = float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n)))
    else:
        ks = 0.0
    return {"mean": math.exp(mu + sigma**2 / 2), "cv": math.sqrt(math.expm1(sigma**2)), "ks": ks, "n": float(n)}


def beta_from_group_means(means: np.ndarray, group_size: int) -> tuple[float, float] | None:
    """Beta(a, b) whose draws, observed through G Bernoulli samples, give these group means (moments); None if
    the groups show no more spread than binomial noise (a fixed pass rate)."""
    m, v = float(means.mean()), float(means.var())
    if group_size <= 1 or m <= 0 or m >= 1:
        return None
    v_p = (v - (m - m * m) / group_size) / (1 - 1 / group_size)
    if v_p <= 1e-9:
        return None
    total = max(m * (1 - m) / v_p - 1, 0.02)
    return m * total, (1 - m) * total


def _spans(ctx: MetricContext, key: str) -> pd.DataFrame:
    return ctx.in_window_steps(ctx.rows(key, "span"))


def _mean_seconds_per_step(ctx: MetricContext, key: str) -> float | None:
    spans = ctx.in_window_steps(ctx.rows(key, "span"))
    if len(spans):
        return float((spans["t1"] - spans["t0"]).sum() / len(ctx.window_steps))
    aggs = ctx.in_window_steps(ctx.rows(key, "agg"))
    return float(aggs["value"].sum() / len(ctx.window_steps)) if len(aggs) and len(ctx.window_steps) else None


def _max_in_flight(spans: pd.DataFrame) -> int:
    starts = spans["t0"].to_numpy()
    ends = spans["t1"].to_numpy()
    events = np.concatenate([np.stack([starts, np.ones(len(starts))], 1), np.stack([ends, -np.ones(len(ends))], 1)])
    events = events[np.lexsort((events[:, 1], events[:, 0]))]  # ends before starts at equal times
    return int(np.cumsum(events[:, 1]).max()) if len(events) else 0


def _mode(trace: Trace, record: RunRecord | None) -> tuple[str, str, str]:
    """(mode, staleness_policy, source) from the record's sim table or the trace's mode string."""
    sim = (record.spec.get("sim") or {}) if record is not None else {}
    if "mode" in sim:
        return sim["mode"], sim.get("staleness_policy", "count"), "the record's spec (sim.mode)"
    mode = trace.meta.mode.lower()
    if not mode:
        return "async", "count", ""
    if "one_step" in mode:
        return "one_step_off", "count", f"trace mode {trace.meta.mode!r}"
    if "async" in mode or "pipeline" in mode:
        return "async", "drop" if "drop" in mode else "count", f"trace mode {trace.meta.mode!r}"
    return "sync", "count", f"trace mode {trace.meta.mode!r}"


def _observed(ctx: MetricContext, name: str) -> float | None:
    result = METRICS[name].fn(ctx)
    return None if result is None or not math.isfinite(result[0]) else float(result[0])


def simulated(cal: Calibration, name: str) -> float | None:
    """A metric of the calibrated spec, simulated."""
    from benchbed.sim import simulate_spec

    spec = build_spec(cal.spec_data(), f"<{cal.name}>")
    ctx = MetricContext(simulate_spec(spec), warmup_steps=spec.warmup_steps)
    return _observed(ctx, name)


ROUND_TRIP_RELATIVE = 0.10  # a calibrated figure within 10% of the run's ...
ROUND_TRIP_ABSOLUTE = 0.02  # ... or within 0.02 of it (figures near 0, such as a small idle ratio)


@dataclass(frozen=True)
class RoundTrip:
    """One headline metric of the run beside the same metric of its calibrated spec, simulated."""

    metric: str
    run: float
    calibrated: float | None

    @property
    def tolerance(self) -> float:
        return max(ROUND_TRIP_RELATIVE * abs(self.run), ROUND_TRIP_ABSOLUTE)

    @property
    def ok(self) -> bool:
        return self.calibrated is not None and abs(self.calibrated - self.run) <= self.tolerance

    def line(self) -> str:
        if self.calibrated is None:
            return f"round trip {self.metric}: run {self.run:.4g}, not produced by the calibrated spec"
        shown = f"{self.calibrated:.4g}"
        within = f"{'within' if self.ok else 'OFF by more than'} ±{self.tolerance:.3g}"
        return f"round trip {self.metric}: run {self.run:.4g}, calibrated spec {shown} ({within})"


def round_trip(cal: Calibration) -> list[RoundTrip]:
    """Every headline metric the run has, beside the calibrated spec's (one simulation for all of them); a row
    that is not `ok` is a figure the calibration does not reproduce."""
    from benchbed.metrics import compute_metrics
    from benchbed.sim import simulate_spec

    spec = build_spec(cal.spec_data(), f"<{cal.name}>")
    twin = compute_metrics(simulate_spec(spec), warmup_steps=spec.warmup_steps)
    return [RoundTrip(name, run, twin[name].value if name in twin else None) for name, run in cal.observed.items()]


def _bisect(cal: Calibration, idle: float, setter: Callable[[float], None], lo: float, hi: float,
            idle_rises: bool, tolerance: float) -> float | None:  # fmt: skip
    """Geometric bisection of one parameter until the simulated idle is within `tolerance` of `idle`."""
    value = None
    for _ in range(24):
        mid = math.sqrt(lo * hi)
        setter(mid)
        value = simulated(cal, "trainer_idle_ratio")
        if value is None or abs(value - idle) <= tolerance or hi / lo < 1.001:
            break
        if (value > idle) == idle_rises:
            hi = mid
        else:
            lo = mid
    return value


def fit_to_idle(cal: Calibration, idle: float, latency_observed: bool, tolerance: float = 0.01) -> None:
    """Fit what the trace does not pin down so the simulated trainer idle matches the run's: the concurrency
    when rollout latencies were observed (then, if slots are too coarse, a scale on those latencies), else the
    mean latency. Each fitted parameter says so in its comment."""
    current = simulated(cal, "trainer_idle_ratio")
    if current is None or abs(current - idle) <= tolerance:
        return
    latency = cal.params[("sim", "latency")]
    if latency_observed:
        slots = cal.params[("sim", "concurrency")]
        group = int(cal.params[("workload", "group_size")].value)

        def set_slots(x: float) -> None:
            cal.params[("sim", "concurrency")] = Param(max(group, int(round(x))), slots.source)

        current = _bisect(cal, idle, set_slots, float(group), float(slots.value) * 64, False, tolerance)
        fitted = cal.params[("sim", "concurrency")].value
        cal.params[("sim", "concurrency")] = Param(
            fitted, f"FITTED by simulation to the run's trainer idle {idle:.3f} (was {slots.value}: {slots.source})"
        )
        cal.missing.append(f"sim.concurrency: fitted by simulation to the observed trainer idle {idle:.3f}")
        if current is None or abs(current - idle) <= 3 * tolerance:
            return
        values = list(latency.value["values"])

        def set_scale(k: float) -> None:
            cal.params[("sim", "latency")] = Param({"dist": "empirical", "values": [v * k for v in values]}, "")

        _bisect(cal, idle, set_scale, 1 / 8, 8.0, True, tolerance)
        scale = cal.params[("sim", "latency")].value["values"][0] / values[0]
        cal.params[("sim", "latency")] = Param(
            {"dist": "empirical", "values": [round(v * scale, 4) for v in values]},
            f"{latency.source}; scaled by {scale:.3f}, FITTED by simulation to the run's trainer idle {idle:.3f}",
        )
        cal.missing.append(f"sim.latency: observed latencies scaled by {scale:.3f} to match the trainer idle")
        return

    def set_mean(x: float) -> None:
        cal.params[("sim", "latency")] = Param({**latency.value, "mean": round(x, 4)}, latency.source)

    mean = float(latency.value["mean"])
    _bisect(cal, idle, set_mean, mean / 64, mean * 64, True, tolerance)
    fitted = cal.params[("sim", "latency")].value
    cal.params[("sim", "latency")] = Param(
        fitted, f"mean FITTED by simulation to the run's trainer idle {idle:.3f} (no rollout timings); cv ASSUMED"
    )
    cal.missing.append(f"sim.latency: mean fitted by simulation to the observed trainer idle {idle:.3f}")


def calibrate(run_dir: str | Path, warmup_steps: int | None = None) -> Calibration:
    """Fit a simulator spec to the run in `run_dir` (a trace.parquet, with its record.json if there is one)."""
    run_dir = Path(run_dir)
    trace = read_trace(run_dir)
    record = read_record(run_dir) if (run_dir / "record.json").exists() else None
    warmup = warmup_steps if warmup_steps is not None else int((record.spec if record else {}).get("warmup_steps", 1))
    ctx = MetricContext(trace, warmup_steps=warmup)
    if not len(ctx.window_steps):
        raise BenchbedError(f"{run_dir}: no training steps after {warmup} warm-up step(s) in the trace; nothing to fit")
    cal = Calibration(name=f"calibrated-{record.spec_id if record else run_dir.name}")
    cal.set("", "warmup_steps", warmup, "the record's warmup_steps" if record else "default")
    spec_workload = (record.spec.get("workload") or {}) if record else {}
    spec_sim = (record.spec.get("sim") or {}) if record else {}

    # Batch and group size.
    rollouts = ctx.rollouts
    trained = ctx.trained_in_window
    group_size = trace.meta.group_size
    if group_size:
        cal.set("workload", "group_size", int(group_size), "trace metadata (group_size)")
    elif len(rollouts) and (rollouts["group"] != "").any():
        sizes = rollouts[rollouts["group"] != ""].groupby("group", observed=True).size()
        group_size = int(sizes.mode().iloc[0])
        cal.set("workload", "group_size", group_size, "most common rollout group size in the trace")
    else:
        group_size = 1
        cal.assume("workload", "group_size", 1, "no group information in the trace")
    batch = trace.meta.samples_per_step
    if batch:
        source = "trace metadata (samples_per_step)"
    elif len(trained):
        batch = int(round(len(trained) / len(ctx.window_steps)))
        source = "trained rollouts per window step"
    else:
        batch = None
    if batch:
        prompts = max(1, int(round(batch / group_size)))
        cal.set("workload", "prompts_per_step", prompts, f"{source}: {batch} samples / G {group_size}")
    else:
        cal.assume("workload", "prompts_per_step", 4, "no batch size in the trace or its metadata")
        prompts = 4
    batch = prompts * group_size
    steps = int(ctx.rows(K.TRAINER_STEP)["step"].max())
    cal.set("workload", "steps", steps, "steps in the trace")

    # Mode and staleness.
    mode, policy, mode_source = _mode(trace, record)
    if mode_source:
        cal.set("sim", "mode", mode, mode_source)
        cal.set("sim", "staleness_policy", policy, mode_source)
    else:
        cal.assume("sim", "mode", mode, "the trace names no mode")
        cal.set("sim", "staleness_policy", policy, "ASSUMED with the mode")
    observed = trained[(trained["v_start"] >= 0) & (trained["v_train"] >= 0)]
    if "max_staleness" in spec_workload:
        cal.set("workload", "max_staleness", int(spec_workload["max_staleness"]), "the record's spec")
    elif len(observed):
        bound = int((observed["v_train"] - observed["v_start"]).max())
        cal.set("workload", "max_staleness", bound, "largest v_train - v_start observed")
    else:
        cal.assume("workload", "max_staleness", 0 if mode == "sync" else 1, "no versions in the trace")

    # Trainer.
    compute = _mean_seconds_per_step(ctx, K.TRAINER_COMPUTE)
    if compute:
        cal.set("sim", "train_step_time", round(compute, 4), "mean trainer.compute seconds per window step")
    else:
        step = _mean_seconds_per_step(ctx, K.TRAINER_STEP)
        wait = _mean_seconds_per_step(ctx, K.TRAINER_WAIT) or 0.0
        if step:
            cal.set("sim", "train_step_time", round(max(step - wait, 1e-3), 4),
                    "mean step minus mean wait per window step (no trainer.compute timer)")  # fmt: skip
        else:
            cal.assume("sim", "train_step_time", 20.0, "no trainer timings in the trace")
    sync = _mean_seconds_per_step(ctx, K.TRAINER_WEIGHT_SYNC)
    if sync is not None:
        cal.set("sim", "weight_sync_time", round(sync, 4), "mean trainer.weight_sync seconds per window step")
    else:
        cal.assume("sim", "weight_sync_time", 0.0, "no trainer.weight_sync timer in the trace")

    # Generator: latency and concurrency.
    spans = rollouts[(rollouts["kind"] == "span") & rollouts["status"].isin(FINISHED_STATUSES)]
    latencies = (spans["t1"] - spans["t0"]).to_numpy()
    latencies = latencies[np.isfinite(latencies) & (latencies > 0)]
    if len(latencies):
        fit = lognormal_fit(latencies)
        cal.lognormal = fit
        points = min(EMPIRICAL_POINTS, len(latencies))
        grid = np.quantile(latencies, (np.arange(points) + 0.5) / points)
        values = [round(float(v), 4) for v in grid]
        cal.set("sim", "latency", {"dist": "empirical", "values": values},
                f"{points} quantiles of {len(latencies)} finished rollouts' t1 - t0 "
                f"(lognormal fit: mean {fit['mean']:.4g} s, cv {fit['cv']:.3g}, KS {fit['ks']:.3f})")  # fmt: skip
    concurrency = trace.meta.concurrency or spec_sim.get("concurrency")
    if concurrency:
        cal.set("sim", "concurrency", int(concurrency), "trace metadata (generator slots)")
    elif len(spans):
        concurrency = _max_in_flight(rollouts[rollouts["kind"] == "span"])
        cal.set("sim", "concurrency", max(concurrency, group_size), "largest number of rollouts in flight")
    else:
        concurrency = batch
        cal.assume("sim", "concurrency", batch, "no rollout spans and no concurrency in the metadata")
    if not len(latencies):
        throughput = len(trained) / ctx.window_seconds[0] if ctx.window_seconds and len(trained) else None
        if throughput:
            mean = float(concurrency) / throughput
            cal.set("sim", "latency", {"dist": "lognormal", "mean": round(mean, 4), "cv": 0.5},
                    "mean by Little's law (concurrency / trained samples per second); cv ASSUMED 0.5")  # fmt: skip
            cal.missing.append("sim.latency: no rollout spans; mean from Little's law, cv assumed 0.5")
        else:
            cal.assume("sim", "latency", {"dist": "lognormal", "mean": DEFAULT_LATENCY_S, "cv": 0.5},
                       "no rollout spans or trained-sample counts")  # fmt: skip

    # Pass rates.
    finished = ctx.finished_in_window
    rewarded = finished[(finished["group"] != "") & finished["value"].notna()]
    if len(rewarded) and group_size > 1:
        means = rewarded.groupby("group", observed=True)["value"].mean().clip(0, 1).to_numpy()
        beta = beta_from_group_means(means, group_size)
        if beta is None:
            cal.set("sim", "pass_rate", round(float(means.mean()), 4), f"mean reward over {len(means)} groups")
        else:
            cal.set("sim", "pass_rate", {"dist": "beta", "a": round(beta[0], 4), "b": round(beta[1], 4)},
                    f"Beta by moments of {len(means)} group mean rewards (binomial noise removed)")  # fmt: skip
    else:
        cal.assume("sim", "pass_rate", {"dist": "beta", "a": 1.0, "b": 1.0}, "no per-group rewards in the trace")
    for name in headline_metrics():  # every headline figure of the run, for the round trip
        value = _observed(ctx, name)
        if value is not None:
            cal.observed[name] = value
    if "staleness_mean" in cal.observed and len(observed) < MIN_STALENESS_SAMPLES:
        cal.missing.append(
            f"staleness_mean: only {len(observed)} trained samples with versions in the window; a mean staleness "
            f"round trip within 10% needs about {MIN_STALENESS_SAMPLES}"
        )
    observed_idle = cal.observed.get("trainer_idle_ratio")
    if observed_idle is not None:
        fit_to_idle(cal, observed_idle, latency_observed=bool(len(latencies)))
    if record is not None and isinstance(record.spec.get("resources"), dict):
        resources = {k: v for k, v in record.spec["resources"].items() if v is not None}
        for key, value in resources.items():
            cal.set("resources", key, value, "the record's spec")
    return cal
