"""Alarms as data (benchbed/diagnosis/alarms.toml): each rule reads one live figure against a threshold and says
why it matters. An alarm fires once, when its condition first holds."""

from __future__ import annotations

import math
import os
import subprocess
from dataclasses import dataclass
from importlib import resources

from benchbed.errors import SpecError
from benchbed.watch.live import LiveFigures, Sums

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

# The observation count each watched figure needs, from the scope's totals.
COUNTS = {
    "sandbox_init_failure_rate": lambda s: s.starts,
    "zero_adv_group_fraction": lambda s: s.groups,
    "truncated_fraction": lambda s: s.rollouts,
    "staleness_max": lambda s: s.stale_n,
    "staleness_mean": lambda s: s.stale_n,
    "trainer_idle_ratio": lambda s: s.steps,
    "gpu_busy_ratio": lambda s: s.gpu_n,
    "gpu_idle_gap": lambda s: s.gpu_n,
}


@dataclass(frozen=True)
class AlarmRule:
    """One rule of alarms.toml."""

    name: str
    watch: str
    reason: str
    scope: str = "window"
    above: float | None = None
    bound: str | None = None
    min_count: int = 1


@dataclass(frozen=True)
class Alarm:
    """A fired alarm: its rule, the figure's value and the threshold it passed."""

    rule: AlarmRule
    value: float
    threshold: float

    def line(self) -> str:
        """One line for the terminal, the record's warnings and the --on-alarm command."""
        return f"alarm {self.rule.name}: {self.rule.watch} {self.value:.4g} > {self.threshold:.4g}: {self.rule.reason}"

    def env(self) -> dict[str, str]:
        """The alarm in environment variables, for the --on-alarm command."""
        return {"BENCHBED_ALARM": self.rule.name, "BENCHBED_ALARM_VALUE": repr(self.value),
                "BENCHBED_ALARM_THRESHOLD": repr(self.threshold), "BENCHBED_ALARM_REASON": self.rule.reason,
                "BENCHBED_ALARM_LINE": self.line()}  # fmt: skip


def load_rules(text: str | None = None, source: str = "alarms.toml") -> list[AlarmRule]:
    """The alarm rules (benchbed/diagnosis/alarms.toml unless `text` is given); a malformed rule names its index."""
    if text is None:
        text = (resources.files("benchbed.diagnosis") / "alarms.toml").read_text(encoding="utf-8")
    rules = []
    for index, table in enumerate(tomllib.loads(text).get("alarm", [])):
        try:
            rule = AlarmRule(**table)
        except TypeError as exc:
            raise SpecError(f"{source}: alarm {index}: {exc}; expected name, watch, reason and a threshold") from None
        if (rule.above is None) == (rule.bound is None) or rule.scope not in ("window", "run"):
            raise SpecError(f"{source}: alarm {rule.name}: expected one of `above` or `bound`, scope window or run")
        rules.append(rule)
    return rules


def _stall(figures: LiveFigures, now: float) -> tuple[float, int]:
    median = figures.median_step_s()
    if figures.total_steps is not None and figures.step_numbers and figures.step_numbers[-1] >= figures.total_steps:
        return math.nan, len(figures.step_times)  # every step is done: the run is shutting down, not stalled
    if not math.isfinite(median) or median <= 0 or not math.isfinite(figures.last_step_at):
        return math.nan, len(figures.step_times)
    return (now - figures.last_step_at) / median, len(figures.step_times)


def _reading(rule: AlarmRule, figures: LiveFigures, now: float) -> tuple[float, int]:
    if rule.watch == "stall":
        return _stall(figures, now)
    scope: Sums = figures.run if rule.scope == "run" else figures.window
    count = COUNTS.get(rule.watch, lambda s: s.steps)(scope)
    return figures.figures()[rule.scope].get(rule.watch, math.nan), count


def _threshold(rule: AlarmRule, figures: LiveFigures) -> float | None:
    if rule.above is not None:
        return rule.above
    return figures.staleness_bound if rule.bound == "staleness" else None


def check(rules: list[AlarmRule], figures: LiveFigures, now: float, fired: set[str]) -> list[Alarm]:
    """The rules whose condition holds now and that have not fired yet (their names are added to `fired`)."""
    alarms = []
    for rule in rules:
        if rule.name in fired:
            continue
        threshold = _threshold(rule, figures)
        value, count = _reading(rule, figures, now)
        if threshold is None or count < rule.min_count or not math.isfinite(value) or value <= threshold:
            continue
        fired.add(rule.name)
        alarms.append(Alarm(rule, value, threshold))
    return alarms


def run_on_alarm(command: str, alarm: Alarm, timeout_s: float = 60.0) -> str | None:
    """Run `command` (a shell line) with the alarm in its environment (Alarm.env); a line saying why when it failed,
    exited non-zero or ran past `timeout_s`, else None."""
    try:
        done = subprocess.run(command, shell=True, env={**os.environ, **alarm.env()}, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"--on-alarm {command!r} for {alarm.rule.name}: still running after {timeout_s:g} s, stopped"
    except OSError as exc:
        return f"--on-alarm {command!r} for {alarm.rule.name}: {exc.strerror or exc}"
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        said = f": {tail}" if tail else ""
        return f"--on-alarm {command!r} for {alarm.rule.name}: exit status {done.returncode}{said}"
    return None
