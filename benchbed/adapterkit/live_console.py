"""Follow a framework's console log (the format table of its `console.toml`, histories.console_formats) like
`tail -F`: only the complete lines written since the last read, a rotated log drained and the new one read, a
truncated one read again from its start (benchbed.watch.tail). Lines are read as `read_console_format` reads them,
one at a time with the same open step; a step's row is released once a later step opens (its lines may go on until
then), or at the run's end. Console lines carry no wall time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.console_formats import ConsoleFormat, line_figures
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
    _steps: dict[int, dict[str, float]] = field(default_factory=dict)
    _current: int | None = None
    _counted: int = 0
    _lines: int = 0

    def __post_init__(self) -> None:
        self.source = HistorySource("console", self.location.stem, str(self.location))
        self._tail = FileTail(self.location)
        self._counted = self.fmt.first_step - 1

    @property
    def resets(self) -> int:
        return self._tail.resets

    def read(self) -> NewRows:
        """The rows of the steps the log has moved past since the last read."""
        for raw in self._tail.read():
            self._lines += 1
            self._line(strip_ansi(split_ray_line(raw)[2]).rstrip("\r"))
        new = NewRows()
        if self._current is not None:
            self._release(self._current, new)
        return new

    def _line(self, line: str) -> None:
        fmt = self.fmt
        opened = fmt.step.search(line) if fmt.step is not None else None
        if opened is not None:
            self._counted = int(opened.group("step")) if "step" in opened.groupdict() else self._counted + 1
            self._current = self._counted + fmt.step_shift
            return
        for rule in fmt.rules:
            match = rule.pattern.search(line)
            if match is None:
                continue
            own, figures = line_figures(rule, match)
            if rule.counts:
                self._counted += 1
                own, self._current = self._counted, self._counted + fmt.step_shift
            step = self._current if own is None else own + fmt.step_shift
            if figures is None:
                self.warnings.append(f"{self.location}:{self._lines}: a {fmt.framework} figure line that could not "
                                     "be read; skipped")  # fmt: skip
            elif step is not None:
                row = self._steps.setdefault(step, {})
                for key, value in figures.items():
                    row[key] = row.get(key, 0.0) + value if rule.sum else value
            return

    def _release(self, below: int | None, new: NewRows) -> None:
        for step in sorted(s for s in self._steps if below is None or s < below):
            row = self._steps.pop(step)
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
