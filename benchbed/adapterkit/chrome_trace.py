"""Chrome trace events written as JSON lines (one event object per line, as AReaL's PerfTracer appends them) -> the
complete events ("ph": "X") as a table in seconds, every unreadable line named by file and line number."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchbed.adapterkit.lines import JsonLines

COLUMNS = ("name", "cat", "t0", "t1", "pid", "tid", "args", "line")


def complete_events(path: Path, warnings: list[str]) -> tuple[pd.DataFrame, bool]:
    """(one row per complete event: name, cat, t0 and t1 in seconds from `ts`/`dur` in microseconds, pid, tid,
    args, line number; whether the file ends in a truncated line). Metadata and instant events are left out."""
    lines = JsonLines(path, warnings)
    rows = []
    for number, event in lines:
        if event.get("ph") != "X":
            continue
        ts, dur = event.get("ts"), event.get("dur")
        if not isinstance(ts, int | float) or not isinstance(dur, int | float) or dur < 0:
            warnings.append(f"{path}:{number}: skipped complete event without numeric ts and dur >= 0 (microseconds)")
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        rows.append((str(event.get("name", "")), str(event.get("cat", "")), ts / 1e6, (ts + dur) / 1e6,
                     event.get("pid"), event.get("tid"), args, number))  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS)), lines.truncated
