"""A run is an AReaL trial folder: the one holding perf_tracer/traces-r{rank}.jsonl (its rank files mark it)."""

from __future__ import annotations

import re
from pathlib import Path

RANK_FILE = re.compile(r"(traces|sessions)-r\d+\.jsonl")


def marks_run(path: Path) -> Path | None:
    """The trial folder above perf_tracer/ or session_tracer/ when `path` is one of their rank files."""
    if RANK_FILE.fullmatch(path.name) and path.parent.name in ("perf_tracer", "session_tracer"):
        return path.parent.parent
    return None
