"""Live figures of a running run as running sums: each observation costs O(1), whatever the run's length.

Two scopes: `window`, the last `window_steps` trainer steps (and the observations made since the first of them),
and `run`, every step above `warmup_steps` (the metric window of docs/reference/metrics.md).
The names are the headline metrics' names where the live figure is the same quantity; the final figures come from
the metrics themselves."""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 40) -> str:
    """The last `width` values as block characters scaled between their minimum and maximum (NaN: a space)."""
    shown = values[-width:]
    finite = [v for v in shown if math.isfinite(v)]
    if not finite:
        return ""
    low, high = min(finite), max(finite)
    span = high - low
    return "".join(
        " " if not math.isfinite(v) else SPARK[0 if span == 0 else round((v - low) / span * (len(SPARK) - 1))]
        for v in shown
    )


def spread(values: list[float], width: int = 40) -> list[float]:
    """At most `width` values picked evenly over the whole list, first and last included: a whole run's sparkline
    in a fixed width (O(width), whatever the run's length)."""
    n = len(values)
    if n <= width:
        return list(values)
    return [values[round(i * (n - 1) / (width - 1))] for i in range(width)]


def gauge(ratio: float, width: int = 20) -> str:
    """A ratio in [0, 1] as a bar of `width` cells, full cells for the busy share (clipped to the bar)."""
    full = round(min(max(ratio, 0.0), 1.0) * width)
    return "█" * full + "░" * (width - full)


@dataclass
class Sums:
    """Running totals for one scope."""

    steps: int = 0
    step_s: float = 0.0
    wait_s: float = 0.0
    samples: int = 0
    stale_n: int = 0
    stale_sum: float = 0.0
    stale_max: float = -math.inf
    groups: int = 0
    zero_adv: int = 0
    rollouts: int = 0
    truncated: int = 0
    starts: int = 0
    start_failures: int = 0
    gpu_n: int = 0
    gpu_sum: float = 0.0

    def add(self, other: Sums, sign: int = 1) -> None:
        """Add (sign 1) or remove (sign -1) another scope's totals; the maximum is kept by the caller."""
        for name in ("steps", "step_s", "wait_s", "samples", "stale_n", "stale_sum", "groups", "zero_adv",
                     "rollouts", "truncated", "starts", "start_failures", "gpu_n", "gpu_sum"):  # fmt: skip
            setattr(self, name, getattr(self, name) + sign * getattr(other, name))


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else math.nan


def _overlap(t0: float, t1: float, w0: float, w1: float) -> float:
    return max(0.0, min(t1, w1) - max(t0, w0))


@dataclass
class GeneratorBusy:
    """Rollout seconds inside the metric window [w0, w1] (the first window step's start to the last step's end), as
    generator_utilization counts them. A rollout ending past w1 is kept aside (at most the concurrency of them)
    and clipped anew; one seen before the window starts waits for w0. Buffered spans of partial rollouts are not
    in the engine's rollout events, so they are not subtracted here."""

    w0: float = math.nan
    w1: float = math.nan
    closed: float = 0.0
    early: list[tuple[float, float]] = field(default_factory=list)
    open: list[tuple[float, float]] = field(default_factory=list)

    def span(self, t0: float, t1: float) -> None:
        """A finished rollout's [t0, t1]."""
        if math.isnan(self.w0):
            self.early.append((t0, t1))
        elif t1 <= self.w1:
            self.closed += _overlap(t0, t1, self.w0, self.w1)
        else:
            self.open.append((t0, t1))

    def window_step(self, t0: float, t1: float) -> None:
        """A trainer step inside the metric window: the window now ends at its end."""
        if math.isnan(self.w0):
            self.w0, self.w1 = t0, t1
            early, self.early = self.early, []
            for span in early:
                self.span(*span)
        self.w1 = max(self.w1, t1)
        still = [span for span in self.open if span[1] > self.w1]
        self.closed += sum(_overlap(*span, self.w0, self.w1) for span in self.open if span[1] <= self.w1)
        self.open = still

    def utilization(self, concurrency: int | None) -> float:
        """Busy slot-seconds over concurrency x the window's seconds (NaN before the window or without slots)."""
        seconds = self.w1 - self.w0
        if not concurrency or not seconds > 0:
            return math.nan
        busy = self.closed + sum(_overlap(*span, self.w0, self.w1) for span in self.open)
        return busy / (concurrency * seconds)


def figures_of(s: Sums, stale_max: float) -> dict[str, float]:
    """The live figures of one scope's totals (NaN where the scope has no data for one)."""
    return {
        "trainer_idle_ratio": _ratio(s.wait_s, s.step_s),
        "step_time_mean_s": _ratio(s.step_s, s.steps),
        "trainer_throughput_sps": _ratio(s.samples, s.step_s),
        "staleness_mean": _ratio(s.stale_sum, s.stale_n),
        "staleness_max": stale_max if s.stale_n else math.nan,
        "zero_adv_group_fraction": _ratio(s.zero_adv, s.groups),
        "truncated_fraction": _ratio(s.truncated, s.rollouts),
        "sandbox_starts": float(s.starts),
        "sandbox_init_failure_rate": _ratio(s.start_failures, s.starts),
        "gpu_busy_ratio": _ratio(s.gpu_sum, s.gpu_n),
        "gpu_idle_gap": (1.0 - _ratio(s.gpu_sum, s.gpu_n)) - _ratio(s.wait_s, s.step_s),
    }


@dataclass
class LiveFigures:
    """What has been observed of a run so far, in O(1) per observation: steps (duration, wait, samples), samples'
    staleness, finished groups, rollouts, sandbox starts, GPU utilization samples. `observed_at` is the watcher's
    clock, for stall alarms."""

    warmup_steps: int = 1
    window_steps: int = 20
    run: Sums = field(default_factory=Sums)
    window: Sums = field(default_factory=Sums)
    step_numbers: list[int] = field(default_factory=list)
    step_times: list[float] = field(default_factory=list)
    history: dict[str, list[float]] = field(default_factory=dict)
    _sorted_times: list[float] = field(default_factory=list)
    last_step_at: float = math.nan
    staleness_bound: float | None = None
    concurrency: int | None = None
    total_steps: int | None = None
    busy: GeneratorBusy = field(default_factory=GeneratorBusy)
    ended: bool = False
    _pending: Sums = field(default_factory=Sums)
    _slices: deque[Sums] = field(default_factory=deque)
    _window_stale: deque[float] = field(default_factory=deque)
    _pending_stale: float = -math.inf

    def step(self, step: int, step_s: float, wait_s: float, samples: int, observed_at: float,
             span: tuple[float, float] | None = None) -> None:  # fmt: skip
        """A finished trainer step (with its [t0, t1] where known): it closes the current slice of observations into
        the window."""
        self.step_numbers.append(step)
        self.step_times.append(step_s)
        bisect.insort(self._sorted_times, step_s)
        self.last_step_at = observed_at
        inside = step > self.warmup_steps
        piece, self._pending = self._pending, Sums()
        piece.steps, piece.step_s, piece.wait_s, piece.samples = 1, step_s, wait_s, samples
        if inside:
            if span is not None:
                self.busy.window_step(*span)
            self.run.add(piece)
            self.run.stale_max = max(self.run.stale_max, self._pending_stale)
        self.window.add(piece)
        self._slices.append(piece)
        self._window_stale.append(self._pending_stale)
        self._pending_stale = -math.inf
        if len(self._slices) > self.window_steps:
            self.window.add(self._slices.popleft(), -1)
            self._window_stale.popleft()
        for scope, values in self.figures().items():
            for name, value in values.items():
                self.history.setdefault(f"{scope}.{name}", []).append(value)

    def staleness(self, values: list[float]) -> None:
        """The staleness of the samples of one trained batch."""
        self._pending.stale_n += len(values)
        self._pending.stale_sum += sum(values)
        if values:
            self._pending_stale = max(self._pending_stale, max(values))

    def group(self, zero_advantage: bool) -> None:
        """A finished group, with whether its rewards have no spread."""
        self._pending.groups += 1
        self._pending.zero_adv += int(zero_advantage)

    def rollout(self, truncated: bool) -> None:
        """A finished sample, with whether it hit the response-length limit (its slot time goes to `busy`)."""
        self._pending.rollouts += 1
        self._pending.truncated += int(truncated)

    def sandbox_start(self, ok: bool) -> None:
        """A sandbox start that finished, ready or failed."""
        self._pending.starts += 1
        self._pending.start_failures += int(not ok)

    def gpu_sample(self, utilization: float) -> None:
        """One GPU's utilization sample as a ratio (NVML, or a tracker's system metrics), taken during the current
        step: it counts with that step, as the gpu metrics count a sample with the first step ending after it."""
        self._pending.gpu_n += 1
        self._pending.gpu_sum += utilization

    def median_step_s(self) -> float:
        """The median duration of the steps seen (NaN before the first), from a list kept sorted as steps come."""
        times, n = self._sorted_times, len(self._sorted_times)
        if not n:
            return math.nan
        return times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2

    def figures(self) -> dict[str, dict[str, float]]:
        """Live figures by scope: `window` (with what was observed since the last step) and `run`."""
        window = Sums()
        window.add(self.window)
        window.add(self._pending)
        stale = max([*self._window_stale, self._pending_stale], default=-math.inf)
        run = figures_of(self.run, self.run.stale_max)
        run["generator_utilization"] = self.busy.utilization(self.concurrency)
        return {"window": {**figures_of(window, stale), "generator_utilization": math.nan}, "run": run}
