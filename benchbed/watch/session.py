"""One watched run: its live reader, figures and alarms, updated on demand, and its final figures once it ends.

Each update reads only the bytes appended since the last one and returns a row per trainer step it saw finish,
with the figures as they stood after that step (LiveFigures keeps them per step), so a slow poll loses no step."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.diagnosis.rules import diagnose_metrics
from benchbed.errors import BenchbedError
from benchbed.metrics.registry import display_order
from benchbed.record import MetricValue
from benchbed.watch.alarms import Alarm, AlarmRule, check, load_rules
from benchbed.watch.gpu import GpuSamplesTail
from benchbed.watch.live import LiveFigures, Sums, figures_of
from benchbed.watch.readers import LiveReader, live_reader

# The figures a step row carries (every live figure), in the registry's display order.
SHOWN = tuple(sorted([*figures_of(Sums(), math.nan), "generator_utilization"], key=display_order))


@dataclass(frozen=True)
class StepRow:
    """A finished trainer step as the watcher saw it: its duration and the figures of both scopes after it."""

    step: int
    step_s: float
    window: dict[str, float]
    run: dict[str, float]

    @property
    def regime(self) -> str:
        """The diagnosis regime of the metric window so far (of the sliding window during the warm-up steps)."""
        scope = self.run if math.isfinite(self.run.get("trainer_idle_ratio", math.nan)) else self.window
        return diagnose_metrics({k: v for k, v in scope.items() if math.isfinite(v)}).regime


@dataclass
class Watch:
    """Follow `run_dir`, written by `adapter`; `clock` stamps observations (the stall alarm compares with it)."""

    run_dir: Path
    adapter: str
    warmup_steps: int = 1
    window_steps: int = 20
    rules: list[AlarmRule] = field(default_factory=load_rules)
    clock: Callable[[], float] = time.time
    figures: LiveFigures = field(init=False)
    alarms: list[Alarm] = field(default_factory=list)
    _reader: LiveReader = field(init=False)
    _gpu: GpuSamplesTail = field(init=False)
    failure: str | None = None  # why the run's files could not be followed to the run's end, in one line
    _fired: set[str] = field(default_factory=set)
    _seen: int = 0

    def __post_init__(self) -> None:
        self.figures = LiveFigures(warmup_steps=self.warmup_steps, window_steps=self.window_steps)
        self._reader = live_reader(self.adapter, Path(self.run_dir), self.figures)
        self._gpu = GpuSamplesTail(Path(self.run_dir))

    def update(self) -> tuple[list[StepRow], list[Alarm]]:
        """Read what was appended since the last update: the steps that finished since, and the alarms that fired."""
        now = self.clock()
        if self.failure is not None:
            return [], []
        self._gpu.update(self.figures)  # samples taken so far count with the step that ends next
        try:
            self._reader.update(now)
        except BenchbedError as exc:  # the run's files cannot be followed further (a damaged history): the end
            self.failure = str(exc)
            self.figures.ended = True
        rows = [self._row(i) for i in range(self._seen, len(self.figures.step_numbers))]
        self._seen = len(self.figures.step_numbers)
        fired = check(self.rules, self.figures, now, self._fired)
        self.alarms.extend(fired)
        return rows, fired

    def _row(self, index: int) -> StepRow:
        history = self.figures.history
        scopes = {scope: {name: history[f"{scope}.{name}"][index] for name in SHOWN} for scope in ("window", "run")}
        return StepRow(self.figures.step_numbers[index], self.figures.step_times[index], **scopes)

    @property
    def framework(self) -> str:
        """The framework the reader follows, as its trace names it."""
        return self._reader.framework

    @property
    def ended(self) -> bool:
        """Whether the run's end was read (or its files cannot be followed further: `failure`)."""
        return self.figures.ended

    @property
    def warnings(self) -> list[str]:
        """The reader's warnings and the fired alarms' lines, for the record."""
        read = self._reader.warnings
        failure = [] if self.failure is None or self.failure in read else [self.failure]
        return [*read, *failure, *self._gpu.warnings, *(a.line() for a in self.alarms)]

    def close(self) -> None:
        """Release the followed files."""
        self._reader.close()
        self._gpu.close()


def final_metrics(run_dir: Path, adapter: str, warmup_steps: int = 1) -> dict[str, MetricValue]:
    """The figures of the finished run, as `benchbed ingest` computes them: the adapter's parse, then the metrics."""
    from benchbed.adapter import get_adapter
    from benchbed.metrics import compute_metrics

    return compute_metrics(get_adapter(adapter).parse(Path(run_dir)), warmup_steps=warmup_steps)
