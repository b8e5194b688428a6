"""A JSON-Lines metrics file as a history: verl's `file` logger lines (`{"step": N, "data": {...}}`) or flat rows
with a `step` key (prime-rl's metrics.jsonl); a `timestamp`/`time` number is the wall time when present."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_rows
from benchbed.adapterkit.lines import JsonLines, loads_lenient

_TIME_KEYS = ("timestamp", "time", "wall_time", "_timestamp")


def read_jsonl_history(path: Path) -> History:
    """Every line with an integer step; other lines are warnings naming the file and line."""
    warnings: list[str] = []
    lines = JsonLines(path, warnings, loads_lenient)
    rows = []
    for number, obj in lines:
        data: Any = obj.get("data") if isinstance(obj.get("data"), dict) else obj
        step = obj.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            warnings.append(f'{path}:{number}: no integer `step`; expected {{"step": N, ...}}')
            continue
        wall = next((obj[k] for k in _TIME_KEYS if isinstance(obj.get(k), (int, float))), None)
        values = {
            k: float(v)
            for k, v in data.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step" and k not in _TIME_KEYS
        }
        rows.append((step, None if wall is None else float(wall), values))  # fmt: skip
    if not rows:
        raise HistoryError(f'{path}: no JSON lines with a `step` (expected {{"step": N, "data": {{...}}}})')
    source = HistorySource("jsonl", path.stem, str(path.resolve()))
    return History(source, frame_from_rows(rows), files=[path], warnings=warnings, partial=lines.truncated)
