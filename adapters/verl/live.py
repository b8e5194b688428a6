"""`benchbed watch` of a verl run: the lines verl's file logger appends to its JSONL (metrics.jsonl,
VERL_FILE_LOGGER_PATH set by the renderer), or, in a run whose only output is its console log, the `step:N - key:value`
lines verl's console logger prints. Each batch of new step records goes through the build_trace the finished run's
parse uses, with the plan benchbed left in the run directory (its mode and batch); a console log's printed config
and Ray actor names are read by the same ConsoleReading that parse's read_console runs, so the live figures end on
the figures `benchbed ingest` gives the finished run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.verl.detect import version_from_files
from benchbed.adapters.verl.discover import CONSOLE, HYDRA_CONFIG, JSONL, find_artifacts, read_hydra_config
from benchbed.adapters.verl.parse import Inputs, build_trace
from benchbed.adapters.verl.records import ConsoleReading
from benchbed.adapters.verl.render import METRICS_FILE

from benchbed.adapterkit.artifacts import Artifacts
from benchbed.adapterkit.handoff import read_handoff
from benchbed.adapterkit.live_jsonl import JsonlStepsReader, Rows, feed_steps, finished
from benchbed.adapterkit.shared import FileTail, LiveFigures
from benchbed.adapterkit.step_columns import StepColumns, fits_int64
from benchbed.api import Trace


@dataclass
class ConsoleStepsReader:
    """Follows one verl console log: its complete lines fed to a ConsoleReading, and each step record fed to the
    live figures once no later line can change it (a step line a terminal wrapped goes on in the next line)."""

    run_dir: Path
    figures: LiveFigures
    log: Path
    found: Artifacts
    framework: str = "verl"
    warnings: list[str] = field(default_factory=list)
    _tail: FileTail = field(init=False)
    _reading: ConsoleReading = field(init=False)
    _lines: int = 0
    _fed: int = 0  # step rows handed to the figures so far
    _config: dict[str, Any] | None = None
    _version: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        self._tail = FileTail(self.log)
        self._reading = ConsoleReading(self.log)
        self._version = version_from_files(Path(self.run_dir))

    @property
    def resets(self) -> int:
        return self._tail.resets

    def update(self, now: float) -> int:
        """Read the lines appended since the last update; the number of new lines. At the run's end a last line
        without its newline is read too, as parse reads it."""
        lines = self._tail.read()
        for text in lines:
            self._lines += 1
            self._reading.feed(self._lines, text, False)
        done = finished(Path(self.run_dir))
        if done and not self.figures.ended:
            rest = self._tail.remainder()
            self._reading.feed(self._lines + 1, rest, bool(rest) or self._lines == 0)
        steps = self._reading.steps
        new = steps.rows[self._fed : len(steps.rows) if done else steps.settled]
        self._fed += len(new)
        records = StepColumns()
        for row in new:
            if fits_int64(row.step):
                records.add(row.step, row.data, str(self.log), row.line)
        if records:
            feed_steps(self._trace(records), self.figures, now)
        self.figures.ended = self.figures.ended or done
        return len(lines)

    def _trace(self, records: StepColumns) -> Trace:
        """The trace of some step records, with the config, actors and version parse takes from the whole log."""
        if self._config is None:  # the lines before the first step are all read once a step record is
            printed = self._reading.config([])
            saved = next((c for p in self.found.of(HYDRA_CONFIG) if (c := read_hydra_config(p))), None)
            self._config = printed if printed and not printed.get("_partial") else (saved or printed or {})
        hints = self._reading.out.text_hints
        version = self._version or ((hints[0], str(self.log)) if hints else None)
        return build_trace(Inputs(records=records, warnings=[], config=self._config or None,
                                  timing_source=str(self.log), sources=[str(self.log)],
                                  actors=set(self._reading.out.actors), explicit_version=version,
                                  plan=self.found.handoff))  # fmt: skip

    def close(self) -> None:
        self._tail.close()


@dataclass
class VerlReader:
    """The live reader of a verl run directory: its file-logger JSONL once it appears (metrics.jsonl, else the
    first JSONL parse would read), else its console log once one holds a step line; until then, nothing to read."""

    run_dir: Path
    figures: LiveFigures
    framework: str = "verl"
    warnings: list[str] = field(default_factory=list)
    reader: JsonlStepsReader | ConsoleStepsReader | None = None

    @property
    def resets(self) -> int:
        return self.reader.resets if self.reader is not None else 0

    def update(self, now: float) -> int:
        """Read what was appended since the last update; the number of new lines."""
        if self.reader is None:
            self.reader = self._locate()
            if self.reader is None:
                self.figures.ended = self.figures.ended or finished(Path(self.run_dir))
                return 0
        return self.reader.update(now)

    def _locate(self) -> JsonlStepsReader | ConsoleStepsReader | None:
        run_dir = Path(self.run_dir)
        if (run_dir / METRICS_FILE).is_file():
            return _jsonl_reader(run_dir, self.figures, METRICS_FILE, self.warnings)
        found = find_artifacts(run_dir)
        if found.of(JSONL):
            return _jsonl_reader(run_dir, self.figures, str(found.of(JSONL)[0].relative_to(run_dir)), self.warnings)
        if found.of(CONSOLE):
            return ConsoleStepsReader(run_dir, self.figures, found.of(CONSOLE)[0], found, warnings=self.warnings)
        return None

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


def _jsonl_reader(run_dir: Path, figures: LiveFigures, name: str, warnings: list[str]) -> JsonlStepsReader:
    plan = read_handoff(run_dir, warnings)

    def to_trace(rows: Rows, path: str) -> Trace:
        records = StepColumns()
        for step, data, line in rows:
            records.add(step, data, path, line)
        return build_trace(Inputs(records=records, warnings=[], config=None, timing_source=path, sources=[path],
                                  plan=plan))  # fmt: skip

    return JsonlStepsReader(run_dir, figures, name, to_trace, "verl", warnings)


def verl_reader(run_dir: Path, figures: LiveFigures) -> VerlReader:
    """The live reader of a verl run directory."""
    return VerlReader(Path(run_dir), figures)
