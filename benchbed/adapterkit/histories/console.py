"""A console log as a history: the `step:N - key:value - key:value ...` lines that verl's `Tracking` console logger
prints (frameworks built on verl's trainer print the same), one row per line, in log order. Ray's actor prefix
and ANSI colours are removed first; a step line that a terminal or a paste broke in two is joined back; values
like `np.float64(0.25)`, `tensor(3.)` and `True` are numbers. Console lines carry no wall time.

`StepLines` is the line-by-line reader, for a parser that reads other things from the same lines in one pass."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_rows
from benchbed.adapterkit.lines import LINE_LIMIT, skip_line
from benchbed.logtext import split_ray_line

STEP_LINE = re.compile(r"(?:^|[\s\r|\]])step:(?P<step>-?\d+) - ")
_WRAPPED = re.compile(r"^(?:np\.\w+|numpy\.\w+|tensor|torch\.tensor)\((?P<inner>[^,)]*)")


def console_value(text: str) -> float | None:
    """A console value: 0.25, np.float64(0.25), np.float32(1e-06), tensor(3.), True; None if not a number."""
    text = text.strip()
    wrapped = _WRAPPED.match(text)
    if wrapped:
        text = wrapped.group("inner")
    if text in ("True", "False"):
        return 1.0 if text == "True" else 0.0
    try:
        return float(text)
    except ValueError:
        return None


def parse_step_line(payload: str) -> tuple[dict[str, float], int]:
    """`k1:v1 - k2:v2 ...` -> ({k: v}, number of pairs that could not be read)."""
    payload = payload.split("\r", 1)[0].rstrip()
    if payload.endswith(" -"):  # a line broken right after a separator
        payload = payload[:-2]
    data: dict[str, float] = {}
    bad = 0
    for pair in payload.split(" - "):
        key, sep, raw = pair.rpartition(":")
        value = console_value(raw) if sep and key else None
        if value is None:
            bad += 1
            continue
        data[key.strip()] = value
    return data, bad


def _rejoin(payload: str, continuation: str) -> str:
    """A step line that a terminal or a paste broke in two, put back together at the break."""
    joined = payload + continuation
    joined = re.sub(r"(?<=\S) -(?=[^\s\d.])", " - ", joined)  # "1.0 -key" where the space was stripped
    return re.sub(r"(?<=[\d)])- (?=\S)", " - ", joined)  # "1.0- key"


def looks_like_console(path: Path, max_lines: int = 20000) -> bool:
    """Whether one of the first `max_lines` lines of `path` is a step line."""
    with path.open("r", errors="replace") as fh:
        for i, line in enumerate(fh):
            if i >= max_lines:
                return False
            if "step:" in line and STEP_LINE.search(split_ray_line(line)[2]):
                return True
    return False


@dataclass
class StepRow:
    """One step line: its step, its numbers (a wrapped line's continuation included) and its line number."""

    step: int
    data: dict[str, float]
    line: int


@dataclass
class StepLines:
    """The step lines of one console log, fed one cleaned line at a time (see `feed`)."""

    path: Path
    rows: list[StepRow] = field(default_factory=list)
    truncated: bool = False
    bad_pairs: int = 0
    _wrapped: tuple[str, StepRow, int] | None = None  # (payload, row, bad pairs) of the last step line

    def feed(self, number: int, line: str, actor: str | None, cut_off: bool, warnings: list[str]) -> None:
        """Read line `number` (Ray prefix removed; `actor` the Ray actor that printed it, if any); `cut_off` marks
        a last line without its closing newline (the writer died): its complete pairs are read, with a warning."""
        match = STEP_LINE.search(line) if "step:" in line else None
        wrapped = self._wrapped
        if match is None:
            self._wrapped = None
            if wrapped is not None and actor is None and ":" in line:
                joined = _rejoin(wrapped[0], line)
                data, bad = parse_step_line(joined)
                if len(data) > len(wrapped[1].data) and bad <= wrapped[2] + 1:  # a wrapped step line goes on
                    self.bad_pairs += bad - wrapped[2]
                    wrapped[1].data = data
                    self._wrapped = (joined, wrapped[1], bad)
            return
        payload = line[match.end() :]
        data, bad = parse_step_line(payload)
        if cut_off:
            self.truncated = True
            warnings.append(f"{self.path}:{number}: last line is cut off (no closing newline); read its complete pairs")
        self.bad_pairs += bad
        self._wrapped = None
        if data:
            self.rows.append(StepRow(int(match.group("step")), data, number))
            self._wrapped = (payload.split("\r", 1)[0], self.rows[-1], bad)

    @property
    def settled(self) -> int:
        """How many rows no later line can change: all but the last while it may still gain a wrapped line's rest."""
        return len(self.rows) - (self._wrapped is not None)

    def finish(self, warnings: list[str]) -> None:
        """Say how many key:value pairs could not be read."""
        if self.bad_pairs:
            warnings.append(
                f"{self.path}: {self.bad_pairs} key:value pair(s) on step lines were not numbers or were cut; skipped"
            )


def read_text_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, whether it is the cut-off last line: no newline ends it), one line at a time, as
    `text.split("\n")` of the whole file numbers them (after a last newline, an empty line); tqdm's `\r` stays inside
    lines, so line numbers match `grep -n`. A line past LINE_LIMIT bytes keeps its first LINE_LIMIT (no log line is
    that long: the file is no log), so neither the file nor one line of it is held whole."""
    with path.open("rb") as fh:
        number = 0
        while raw := fh.readline(LINE_LIMIT):
            number += 1
            if len(raw) == LINE_LIMIT and not raw.endswith(b"\n"):
                skip_line(fh)
                fh.seek(-1, 1)
                if fh.read(1) == b"\n":  # the line ended (its rest read past), not the file
                    raw += b"\n"
            if not raw.endswith(b"\n"):
                yield number, raw.decode(errors="replace"), True
                return
            yield number, raw[:-1].decode(errors="replace"), False
        yield number + 1, "", number == 0  # an empty file is one cut-off empty line, as split gives it


def read_console_history(path: Path) -> History:
    """Every step line of a console log as a history row (no wall time: console step lines carry none)."""
    warnings: list[str] = []
    steps = StepLines(path)
    for number, raw, cut_off in read_text_lines(path):
        actor, _, line = split_ray_line(raw)
        steps.feed(number, line, actor or None, cut_off, warnings)
    steps.finish(warnings)
    if not steps.rows:
        raise HistoryError(f"{path}: no `step:N - key:value` lines (the console format of verl's Tracking)")
    source = HistorySource("console", path.stem, str(path.resolve()))
    frame = frame_from_rows((row.step, None, row.data) for row in steps.rows)
    return History(source, frame, files=[path], warnings=warnings, partial=steps.truncated)
