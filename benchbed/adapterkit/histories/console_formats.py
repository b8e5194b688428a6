"""A framework's own console output (what it prints per step) read as a history through a format table kept as data:
`console.toml` in the adapter's package. The table names the line that marks the framework's log (`marks`), the
line that opens a step (`step`, its number in group `step` or counted from `first_step`), the lines that carry
figures (`[[line]]`: a `value` group under `key`, a `{key}` template filled from the line's groups, or a whole
`json` object, a Python `dict` or a table row of `cells` printed on one line; `counts`: each such line is the next
step, for logs that print no step number) and the keys a readable log must
have (`required`, described by `expected`), so a log that is the framework's but lacks its timing is refused
saying what was found and what is missing. Ray's actor prefix and ANSI colours are removed first; console lines
carry no wall time."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.console import console_value, read_text_lines
from benchbed.adapterkit.histories.history import History, HistorySource, frame_from_rows
from benchbed.errors import AdapterError
from benchbed.logtext import split_ray_line, strip_ansi

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = "console.toml"
KINDS = ("value", "json", "dict", "cells")
_DICT_PAIR = re.compile(r"""['"](?P<key>[^'"]+)['"]\s*:\s*(?P<value>[^,{}]+)""")
_SCAN = 20000  # lines looked at to tell whose console log a file is


@dataclass(frozen=True)
class LineRule:
    """One kind of figure line: its pattern, the key it fills and whether repeats within a step add up."""

    pattern: re.Pattern[str]
    kind: str
    key: str
    prefix: str
    sum: bool
    json_step: str
    json_values: str
    counts: bool


@dataclass(frozen=True)
class ConsoleFormat:
    """A framework's console format (see the module docstring)."""

    framework: str
    title: str
    source: str
    path: Path
    marks: re.Pattern[str]
    step: re.Pattern[str] | None
    first_step: int
    step_shift: int
    required: re.Pattern[str]
    expected: str
    rules: tuple[LineRule, ...]

    def recognises(self, path: Path) -> bool:
        """Whether one of the first lines of a text file is this framework's marking line."""
        try:
            with path.open("r", errors="replace") as fh:
                for i, line in enumerate(fh):
                    if i >= _SCAN:
                        return False
                    if self.marks.search(strip_ansi(line)):
                        return True
        except (OSError, UnicodeDecodeError):
            return False
        return False


def _compile(path: Path, name: str, text: Any) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except (re.error, TypeError) as exc:
        raise AdapterError(f"{path}: {name}: not a regular expression ({exc})") from exc


@cache
def load_console_format(path: Path) -> ConsoleFormat | None:
    """The format table at `path`; None when there is none; AdapterError naming the file and the entry."""
    if not path.is_file():
        return None
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise AdapterError(f"{path}: cannot read the console format ({exc})") from exc
    rules = []
    for i, item in enumerate(raw.get("line") or [], 1):
        kind = item.get("kind", "value")
        if kind not in KINDS:
            raise AdapterError(f"{path}: [[line]] #{i}: kind {kind!r} is not one of {list(KINDS)}")
        rules.append(LineRule(_compile(path, f"[[line]] #{i}", item.get("pattern")), kind, item.get("key", ""),
                              item.get("prefix", ""), bool(item.get("sum", False)), item.get("json_step", ""),
                              item.get("json_values", ""), bool(item.get("counts", False))))  # fmt: skip
    try:
        step = _compile(path, "step", raw["step"]) if raw.get("step") else None
        return ConsoleFormat(raw["framework"], raw["title"], raw["source"], path, _compile(path, "marks", raw["marks"]),
                             step, int(raw.get("first_step", 1)), int(raw.get("step_shift", 0)),
                             _compile(path, "required", raw["required"]), raw["expected"], tuple(rules))  # fmt: skip
    except KeyError as exc:
        raise AdapterError(f"{path}: a console format needs {exc} (see {__name__})") from exc


def format_of(adapter: str) -> ConsoleFormat | None:
    """The console format of a bundled adapter (`console.toml` in its package), if it has one."""
    spec = importlib.util.find_spec(f"benchbed.adapters.{adapter}") if adapter.isidentifier() else None
    origin = spec.origin if spec is not None else None
    return load_console_format(Path(origin).with_name(FILE)) if origin else None


def recognising(path: Path, adapters: list[str]) -> list[str]:
    """The adapters among `adapters` whose console format marks the text file at `path` as theirs."""
    found = []
    for name in adapters:
        fmt = format_of(name)
        if fmt is not None and fmt.recognises(path):
            found.append(name)
    return found


def console_adapter(path: Path, adapters: list[str]) -> str:
    """The one adapter among `adapters` whose console format marks the text file at `path` as its own, so a console
    log needs no --adapter; AdapterError in one line naming the file when none or several do."""
    found = recognising(path, adapters)
    if len(found) == 1:
        return found[0]
    if found:
        raise AdapterError(f"{path}: the console formats of several adapters recognise it ({', '.join(found)}); "
                           "name the framework that wrote it with --adapter")  # fmt: skip
    known = ", ".join(name for name in adapters if format_of(name) is not None)
    raise AdapterError(f"{path}: not a tracker history, and no adapter's console format ({known}) recognises it; "
                       "name the framework that wrote it with --adapter")  # fmt: skip


@dataclass
class ConsoleSteps:
    """A console log's figures by step, read a line at a time: the one reading of a console format, which ingest
    (read_console_format) and watch (adapterkit.live_console) share."""

    fmt: ConsoleFormat
    steps: dict[int, dict[str, float]] = field(default_factory=dict)
    current: int | None = None
    counted: int = 0

    def __post_init__(self) -> None:
        self.counted = self.fmt.first_step - 1

    def feed(self, line: str) -> bool | None:
        """Read one line (ANSI codes and Ray's prefix removed): None when it is no figure line (a step opener
        included), False for a figure line that cannot be read, True for one read."""
        fmt = self.fmt
        opened = fmt.step.search(line) if fmt.step is not None else None
        if opened is not None:
            self.counted = int(opened.group("step")) if "step" in opened.groupdict() else self.counted + 1
            self.current = self.counted + fmt.step_shift
            return None
        for rule in fmt.rules:
            match = rule.pattern.search(line)
            if match is None:
                continue
            own, figures = line_figures(rule, match)
            if rule.counts:
                self.counted += 1
                own, self.current = self.counted, self.counted + fmt.step_shift
            step = self.current if own is None else own + fmt.step_shift
            if figures is None:
                return False
            if step is not None:
                row = self.steps.setdefault(step, {})
                for key, value in figures.items():
                    row[key] = row.get(key, 0.0) + value if rule.sum else value
            return True
        return None


def read_console_format(path: Path, fmt: ConsoleFormat) -> History:
    """Every figure line of a console log, by step; AdapterError when the log is the framework's but carries none of
    the `required` keys (what was recognised and what is missing, in one line)."""
    reading = ConsoleSteps(fmt)
    warnings: list[str] = []
    cut_off: int | None = None
    for number, raw, cut in read_text_lines(path):
        cut_off = number if cut else cut_off
        seen = reading.feed(strip_ansi(split_ray_line(raw)[2]).rstrip("\r"))
        if seen is False:
            warnings.append(f"{path}:{number}: a {fmt.framework} figure line that could not be read; skipped")
        if seen is not None and cut_off == number:
            warnings.append(f"{path}:{number}: last line is cut off (no closing newline); read what it holds")
    steps = reading.steps
    found = sorted({k for row in steps.values() for k in row})
    if not any(fmt.required.fullmatch(k) for k in found):
        shown = f" (it holds {', '.join(found[:5])}{' ...' if len(found) > 5 else ''})" if found else ""
        raise AdapterError(f"{path}: {fmt.title}, but no timing block{shown}; expected {fmt.expected}")
    source = HistorySource("console", path.stem, str(path.resolve()))
    frame = frame_from_rows((step, None, row) for step, row in sorted(steps.items()) if row)
    return History(source, frame, files=[path], warnings=warnings, partial=cut_off is not None)


def line_figures(rule: LineRule, match: re.Match[str]) -> tuple[int | None, dict[str, float] | None]:
    """(the step the line names itself, None for the open step; its figures by key, None when unreadable)."""
    groups = match.groupdict()
    if rule.kind == "value":
        value = console_value(groups["value"])
        return None, None if value is None else {rule.prefix + rule.key.format(**groups): value}
    text = groups.get("data", "")
    if rule.kind == "cells":  # a table row of (key, value) cell pairs, split on the pattern's `sep` group
        cells = [c.strip() for c in text.split(groups["sep"])]
        pairs = {k: console_value(v) for k, v in zip(cells[::2], cells[1::2], strict=False) if k}
        return None, {rule.prefix + k: v for k, v in pairs.items() if v is not None} or None
    if rule.kind == "dict":
        pairs = {m["key"]: console_value(m["value"].strip().strip("'\"")) for m in _DICT_PAIR.finditer(text)}
        step = int(groups["step"]) if groups.get("step") else None
        return step, {rule.prefix + k: v for k, v in pairs.items() if v is not None} or None
    try:
        obj = json.loads(text)
    except ValueError:
        return None, None
    if not isinstance(obj, dict):
        return None, {}
    step = obj.get(rule.json_step) if rule.json_step else None
    values = obj.get(rule.json_values, {}) if rule.json_values else obj
    if not isinstance(values, dict) or (step is not None and not isinstance(step, int)):
        return None, None
    return step, {rule.prefix + k: float(v) for k, v in values.items() if isinstance(v, int | float)}
