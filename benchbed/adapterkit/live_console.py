"""Follow a framework's console log (the format table of its `console.toml`, histories.console_formats) like
`tail -F`: only the complete lines written since the last read, a rotated log drained and the new one read, a
truncated one read again from its start (benchbed.watch.tail). Lines are read as `read_console_format` reads them,
one at a time with the same open step; a step's row is released once a later step opens (its lines may go on until
then), or at the run's end. Console lines carry no wall time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.console_formats import ConsoleFormat, ConsoleSteps
from benchbed.adapterkit.histories.history import HistorySource
from benchbed.adapterkit.live_rows import NewRows
from benchbed.logtext import split_ray_line, strip_ansi
from benchbed.watch.tail import FileTail


@dataclass
class ConsoleFollower:
    """The rows of the console log at `location`, read through the framework's console format `fmt`."""

    location: Path
    fmt: ConsoleFormat
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    source: HistorySource = field(init=False)
    _tail: FileTail = field(init=False)
    _reading: ConsoleSteps = field(init=False)
    _lines: int = 0

    def __post_init__(self) -> None:
        self.source = HistorySource("console", self.location.stem, str(self.location))
        self._tail = FileTail(self.location)
        self._reading = ConsoleSteps(self.fmt)

    @property
    def resets(self) -> int:
        return self._tail.resets

    @property
    def damage(self) -> None:
        """Text lines: nothing in them stops the following."""
        return None

    def read(self) -> NewRows:
        """The rows of the steps the log has moved past since the last read."""
        for raw in self._tail.read():
            self._lines += 1
            if self._reading.feed(strip_ansi(split_ray_line(raw)[2]).rstrip("\r")) is False:
                self.warnings.append(f"{self.location}:{self._lines}: a {self.fmt.framework} figure line that could "
                                     "not be read; skipped")  # fmt: skip
        new = NewRows()
        if self._reading.current is not None:
            self._release(self._reading.current, new)
        return new

    def _release(self, below: int | None, new: NewRows) -> None:
        steps = self._reading.steps
        for step in sorted(s for s in steps if below is None or s < below):
            row = steps.pop(step)
            if row:
                new.rows.append((step, None, row))

    def flush(self) -> NewRows:
        """Every step still held, at the run's end."""
        new = NewRows()
        self._release(None, new)
        return new

    def close(self) -> None:
        """Release the log."""
        self._tail.close()
