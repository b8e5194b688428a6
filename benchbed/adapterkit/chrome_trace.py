"""Chrome trace events written as JSON lines (one event object per line, as AReaL's PerfTracer and tinker-cookbook's
TraceCollector append them) -> the complete events as a table in seconds, every unreadable line named by file and
line number. A complete event is an "X" event (`ts` and `dur`), or a "B" event closed by the next "E" event on its
track (same `pid` and `tid`; Chrome's duration events nest per track, so an "E" closes the innermost open "B")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from benchbed.adapterkit.lines import JsonLines

COLUMNS = ("name", "cat", "t0", "t1", "pid", "tid", "args", "line")


def complete_events(path: Path, warnings: list[str]) -> tuple[pd.DataFrame, bool]:
    """(one row per complete event: name, cat, t0 and t1 in seconds from `ts` (and `dur`) in microseconds, pid,
    tid, args (a B/E pair's merged: the end event's win), line number of its start; whether the file ends in a
    truncated line). Metadata and instant events are left out; a B never closed or an E with none open is a
    warning."""
    lines = JsonLines(path, warnings)
    rows: list[tuple[Any, ...]] = []
    open_: dict[tuple[Any, Any], list[tuple[int, dict[str, Any]]]] = {}  # track -> stack of (line, B event)
    for number, event in lines:
        phase = event.get("ph")
        if phase not in ("X", "B", "E"):
            continue
        ts, dur = event.get("ts"), event.get("dur") if phase == "X" else 0
        if not isinstance(ts, int | float) or not isinstance(dur, int | float) or dur < 0:
            want = "numeric ts and dur >= 0" if phase == "X" else "a numeric ts"
            warnings.append(f"{path}:{number}: skipped {phase!r} event without {want} (microseconds)")
            continue
        track = (event.get("pid"), event.get("tid"))
        if phase == "B":
            open_.setdefault(track, []).append((number, event))
            continue
        if phase == "E":
            if not open_.get(track):
                warnings.append(f"{path}:{number}: skipped 'E' event with no 'B' open on pid {track[0]} tid {track[1]}")
                continue
            number, begin = open_[track].pop()
            args = {**_args(begin), **_args(event)}
            rows.append((str(begin.get("name", "")), str(begin.get("cat", "")), begin["ts"] / 1e6, ts / 1e6,
                         *track, args, number))  # fmt: skip
            continue
        rows.append((str(event.get("name", "")), str(event.get("cat", "")), ts / 1e6, (ts + dur) / 1e6,
                     *track, _args(event), number))  # fmt: skip
    for number, begin in sorted(b for stack in open_.values() for b in stack):
        warnings.append(f"{path}:{number}: 'B' event {begin.get('name', '')!r} never ended; left out")
    rows.sort(key=lambda row: row[-1])
    return pd.DataFrame(rows, columns=list(COLUMNS)), lines.truncated


def _args(event: dict[str, Any]) -> dict[str, Any]:
    return event["args"] if isinstance(event.get("args"), dict) else {}
