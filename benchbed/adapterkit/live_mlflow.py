"""Follow an MLflow file store as a run logs to it: each metric is a file `metrics/<key>` that mlflow appends one
line `timestamp_ms value step` to per logged value (mlflow/store/tracking/file_store.py, `_log_run_metric`), so
each key is tailed line by line. Rows are merged per step as `read_mlflow` merges them (the last value of a step
wins, the row's time is its latest timestamp); a step is released once a later step has been logged (one process
logs a step's keys before the next step's), or at the run's end (meta.yaml's status no longer RUNNING). `system/`
keys are mlflow's system metrics, sampled on their own counter: they are GPU samples, not rows."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.histories.history import HistorySource
from benchbed.adapterkit.histories.mlflow_runs import SYSTEM_PREFIX, unflatten
from benchbed.adapterkit.live_rows import NewRows, TrackerFollower
from benchbed.watch.tail import FileTail

RUNNING = 1  # mlflow.entities.RunStatus.RUNNING, as meta.yaml's `status` stores it
_STATUS = re.compile(r"^status:\s*(\d+)\s*$", re.MULTILINE)


def run_folder(location: Path) -> Path | None:
    """The run folder at `location` (itself, or the one run of a store: `<experiment>/<run>/metrics`)."""
    if (location / "meta.yaml").is_file() and (location / "metrics").is_dir():
        return location
    found = sorted(p.parent for p in location.glob("*/*/metrics") if (p.parent / "meta.yaml").is_file())
    return found[0] if len(found) == 1 else None


def _files_under(root: Path) -> list[tuple[str, Path]]:
    """(key, path) of every file under `root`, the key its path relative to `root` joined by '/'."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            out.append((path.relative_to(root).as_posix(), path))
    return out


@dataclass
class MlflowFollower(TrackerFollower):
    """The rows of the one run of an MLflow file store (or of one run folder)."""

    tracker = "mlflow"

    _run: Path | None = None
    _tails: dict[str, FileTail] = field(default_factory=dict)
    _lines: dict[str, int] = field(default_factory=dict)
    _held: dict[int, tuple[float, dict[str, float]]] = field(default_factory=dict)
    _top: int | None = None

    @property
    def resets(self) -> int:
        return sum(t.resets for t in self._tails.values())

    @property
    def damage(self) -> None:
        """Text lines: nothing in them stops the following."""
        return None

    def read(self) -> NewRows:
        """The rows of the steps the run has moved past since the last read, its GPU samples, and its end."""
        new = NewRows()
        if self._run is None:
            self._run = run_folder(self.location)
            if self._run is None:
                return new
            self.source = HistorySource("mlflow", self._run.name, f"{self.location}#{self._run.name}")
        for key, path in _files_under(self._run / "metrics"):
            tail = self._tails.setdefault(key, FileTail(path))
            for line in tail.read():
                self._line(key, path, line, new)
        if self._top is not None:
            self._release(self._top, new)
        new.ended = self._status() not in (None, RUNNING)
        return new

    def _line(self, key: str, path: Path, line: str, new: NewRows) -> None:
        self._lines[key] = self._lines.get(key, 0) + 1
        parts = line.split()
        try:
            wall, value = float(parts[0]) / 1000.0, float(parts[1])
            step = int(parts[2]) if len(parts) > 2 else 0
        except (IndexError, ValueError):
            self.warnings.append(f"{path}:{self._lines[key]}: expected `timestamp value step`; left to ingest")
            return
        if key.startswith(SYSTEM_PREFIX):
            new.samples[0].append(wall)
            new.samples[1].append(key)
            new.samples[2].append(value)
            return
        at, values = self._held.get(step, (-math.inf, {}))
        values[key] = value
        self._held[step] = (max(at, wall), values)
        self._top = step if self._top is None else max(self._top, step)

    def _release(self, below: int | None, new: NewRows) -> None:
        if not self.config and self._held and self._run is not None:  # params are logged before the first metric
            params = {key: path.read_text(errors="replace") for key, path in _files_under(self._run / "params")}
            self.config = unflatten(params)
        for step in sorted(s for s in self._held if below is None or s < below):
            wall, values = self._held.pop(step)
            new.rows.append((step, wall, values))

    def _status(self) -> int | None:
        try:
            found = _STATUS.search((self._run / "meta.yaml").read_text()) if self._run else None
        except OSError:
            return None
        return int(found.group(1)) if found else None

    def flush(self) -> NewRows:
        """Every step still held, at the run's end."""
        new = NewRows()
        self._release(None, new)
        return new

    def close(self) -> None:
        """Release the metric files."""
        for tail in self._tails.values():
            tail.close()
