"""A JSON-Lines metrics file as a history: verl's `file` logger lines (`{"step": N, "data": {...}}`) or flat rows
with a `step` key (prime-rl's metrics.jsonl); a `timestamp`/`time` number is the wall time when present.

`read_step_records` is the line reader, for a parser that needs every value of a record; `read_step_columns` the
same into columns, for a file of millions of steps (verl's)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_rows
from benchbed.adapterkit.lines import JsonLines, loads_stdlib
from benchbed.adapterkit.step_columns import StepColumns, fits_int64

_TIME_KEYS = ("timestamp", "time", "wall_time", "_timestamp")


@dataclass(slots=True)
class StepRecord:
    """One line's record: its step, its values (a non-finite number left out), its line and its wall time."""

    step: int
    data: dict[str, Any]
    line: int
    wall: float | None


_Line = tuple[int, int, dict[str, Any], dict[str, Any]]  # (line, step, values, the line's object)


def _step_lines(path: Path, warnings: list[str], flat: bool) -> tuple[JsonLines, Iterator[_Line]]:
    """The file's lines and, one at a time, (line, step, values, the line's object) of every line with an integer
    step and a `data` object (or, when `flat`, the line's own keys); each other line is a warning naming the file and
    line.

    Python's json.dumps (verl's file logger) spells a NaN or inf value as a bare token: the line is kept and only
    that value is left out, with one warning per key listing the steps (once the lines are read)."""
    tokens: list[int] = []  # ids of objects from lines orjson refuses: NaN/Infinity tokens, numbers overflowing

    def loads(raw: bytes) -> Any:
        try:
            return orjson.loads(raw)
        except ValueError:
            obj = loads_stdlib(raw)
            tokens.append(id(obj))
            return obj

    lines = JsonLines(path, warnings, loads)

    def records() -> Iterator[_Line]:
        non_finite: dict[str, list[int]] = {}
        for number, obj in lines:
            step, data = obj.get("step"), obj.get("data")
            if data.__class__ is not dict:
                data = obj if flat else None
            if data is None or step.__class__ is not int or not fits_int64(step):
                expected = '{"step": N, ...}' if flat else '{"step": N, "data": {...}}'
                why = "no integer `step`" if flat else f"not a file-logger record (step {step!r})"
                warnings.append(f"{path}:{number}: {why}; expected {expected}")
                continue
            if tokens and tokens[-1] == id(obj):
                bad = [k for k, v in data.items() if v.__class__ is float and not math.isfinite(v)]
                if bad:
                    data = {k: v for k, v in data.items() if k not in bad}
                    for key in bad:
                        non_finite.setdefault(key, []).append(step)
            yield number, step, data, obj
        for key, steps in sorted(non_finite.items()):
            shown = ", ".join(map(str, steps[:10])) + (" ..." if len(steps) > 10 else "")
            warnings.append(f"{path}: {key} is NaN or infinite at step(s) {shown}; left out there")

    return lines, records()


def read_step_records(path: Path, warnings: list[str], flat: bool = True) -> tuple[list[StepRecord], bool]:
    """(records, whether the last line was cut off) of every line with an integer step and a `data` object (or,
    when `flat`, the line's own keys); see `_step_lines`."""
    lines, records = _step_lines(path, warnings, flat)
    out = [StepRecord(step, data, number, _wall(obj) if flat else None) for number, step, data, obj in records]
    return out, lines.truncated


def read_step_columns(path: Path, warnings: list[str]) -> tuple[StepColumns, bool]:
    """`read_step_records` of `{"step": N, "data": {...}}` lines into columns, a line at a time: a file of 10^6 steps
    is never held as dicts (see step_columns)."""
    lines, records = _step_lines(path, warnings, flat=False)
    columns, source = StepColumns(), str(path)
    for number, step, data, _ in records:
        columns.add(step, data, source, number)
    return columns, lines.truncated


def _wall(obj: dict[str, Any]) -> Any:
    return next((obj[k] for k in _TIME_KEYS if obj.get(k).__class__ in (int, float)), None)


def read_jsonl_history(path: Path) -> History:
    """Every line with an integer step; other lines are warnings naming the file and line."""
    warnings: list[str] = []
    records, truncated = read_step_records(path, warnings)
    rows = [
        (
            r.step,
            None if r.wall is None else float(r.wall),
            {
                k: float(v)
                for k, v in r.data.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step" and k not in _TIME_KEYS
            },
        )
        for r in records
    ]
    if not rows:
        raise HistoryError(f'{path}: no JSON lines with a `step` (expected {{"step": N, "data": {{...}}}})')
    source = HistorySource("jsonl", path.stem, str(path.resolve()))
    return History(source, frame_from_rows(rows), files=[path], warnings=warnings, partial=truncated)
