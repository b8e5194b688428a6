"""A live reader for a framework whose per-step figures are the lines of a metrics JSONL (`{"step": N, "data": {...}}`,
verl's file logger): each update turns the lines appended since the last one into the adapter's own trace rows
(`to_trace`, the parse the finished run gets), and feeds each step's duration, wait and trained samples to the live
figures. The run has ended once benchbed's record of it says so (a run benchbed launched), or never for a run it
did not launch: `benchbed watch` is then stopped by hand."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchbed import keys as K
from benchbed.trace import Trace, member
from benchbed.watch.live import LiveFigures
from benchbed.watch.tail import FileTail

Rows = list[tuple[int, dict[str, Any], int]]  # (step, data, line number) of the new complete lines
RECORD_FILENAME = "record.json"  # benchbed.store's record of a run it launched
_AGG = frozenset({"agg"})
_FED = frozenset({K.TRAINER_STEP, K.TRAINER_WAIT, K.SAMPLES_TRAINED})  # the agg keys the live figures take


@dataclass
class JsonlStepsReader:
    """Follows `run_dir/name`; `to_trace(rows, path)` is the adapter's parse of some of its lines."""

    run_dir: Path
    figures: LiveFigures
    name: str
    to_trace: Callable[[Rows, str], Trace]
    framework: str
    warnings: list[str] = field(default_factory=list)
    _tail: FileTail = field(init=False)
    _lines: int = 0

    def __post_init__(self) -> None:
        self._tail = FileTail(Path(self.run_dir) / self.name)

    @property
    def resets(self) -> int:
        return self._tail.resets

    def update(self, now: float) -> int:
        """Read the lines appended since the last update; the number of new lines."""
        lines = self._tail.read()
        rows: Rows = []
        for text in lines:
            self._lines += 1
            try:
                record = json.loads(text)
            except json.JSONDecodeError:
                self.warnings.append(f"{self._tail.path}:{self._lines}: not a JSON line (the final parse names it)")
                continue
            step, data = (record.get("step"), record.get("data")) if isinstance(record, dict) else (None, None)
            if isinstance(step, int) and isinstance(data, dict):
                rows.append((step, data, self._lines))
        if rows:
            feed_steps(self.to_trace(rows, str(self._tail.path)), self.figures, now)
        self.figures.ended = self.figures.ended or finished(Path(self.run_dir))
        return len(lines)

    def close(self) -> None:
        self._tail.close()


def feed_steps(trace: Trace, figures: LiveFigures, now: float, before: Callable[[int], None] | None = None) -> None:
    """Each step of a trace of new rows, in step order: its duration, wait (NaN where the framework logs none) and
    trained samples, the sums of its `agg` rows; `before(step)` is called first (to credit what was observed during
    that step). One pass over the rows' arrays: an update's cost is that of its new rows."""
    events = trace.events
    per_step: dict[str, dict[int, float]] = {K.TRAINER_STEP: {}, K.TRAINER_WAIT: {}, K.SAMPLES_TRAINED: {}}
    rows = np.flatnonzero(member(events["kind"], _AGG) & member(events["key"], _FED))  # judged per category
    keys = events["key"].to_numpy()[rows]
    steps, values = events["step"].to_numpy()[rows], events["value"].to_numpy(dtype=float)[rows]
    for key, step, value in zip(keys, steps.tolist(), values.tolist(), strict=True):
        sums = per_step[key]
        sums[step] = sums.get(step, 0.0) + value
    for step in sorted(per_step[K.TRAINER_STEP]):
        if before is not None:
            before(step)
        wait_s = per_step[K.TRAINER_WAIT].get(step, math.nan)
        samples = per_step[K.SAMPLES_TRAINED].get(step, 0.0)
        figures.step(step, per_step[K.TRAINER_STEP][step], wait_s, int(samples), now)


def finished(run_dir: Path) -> bool:
    """Whether benchbed's record of the run (a run it launched) says the run is over."""
    try:
        return json.loads((run_dir / RECORD_FILENAME).read_text()).get("status") not in (None, "started")
    except (OSError, ValueError, AttributeError):
        return False
