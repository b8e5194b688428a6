"""A run that died before it logged a step: the error its log ends in (the last Python traceback's final line).

A framework's log of such a run holds no metrics, yet it is the framework's: ingest keeps it as a `failed` record
with this error instead of refusing the file (see `benchbed.errors.RunFailedError`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from benchbed.logtext import split_ray_line

TAIL_BYTES = 2_000_000  # a traceback sits at the end of a log: only the last 2 MB are read
TAIL_LINES = 40  # lines of the traceback kept for the record's log_tail
_TRACEBACK = "Traceback (most recent call last)"
# the line that names the exception: `ValueError: text`, `torch.OutOfMemoryError: ...`, `KeyboardInterrupt`,
# `ray.exceptions.RayTaskError(FileNotFoundError): ray::TaskRunner.run() ...`, not indented (frames are)
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?=[A-Za-z_])\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)\w*(?:\([\w.]*\))?(?::.*)?$"
)


@dataclass(frozen=True)
class LastError:
    """The exception line a log ends in, where it is, and the traceback above it (for the record)."""

    message: str
    line: int  # 1-based line number in the file
    tail: str


def last_error(path: Path) -> LastError | None:
    """The final exception line of the last traceback in `path` (Ray's actor prefixes and colours removed), or
    None when the log holds no traceback or no exception line after it."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            start = max(0, size - TAIL_BYTES)
            fh.seek(start)
            data = fh.read()
            fh.seek(0)
            skipped_lines = fh.read(start).count(b"\n") if start else 0
    except OSError:
        return None
    lines = [split_ray_line(raw)[2] for raw in data.decode(errors="replace").split("\n")]
    if start:  # the first line read may be a fragment
        lines, skipped_lines = lines[1:], skipped_lines + 1
    begin = next((i for i in range(len(lines) - 1, -1, -1) if _TRACEBACK in lines[i]), None)
    if begin is None:
        return None
    found = None
    for i in range(begin + 1, len(lines)):
        text = lines[i].rstrip()
        if _EXCEPTION.match(text):
            found = i
    if found is None:
        return None
    first = max(begin, found - TAIL_LINES + 1)
    return LastError(
        message=lines[found].strip(),
        line=skipped_lines + found + 1,
        tail="\n".join(line.rstrip() for line in lines[first : found + 1]),
    )
