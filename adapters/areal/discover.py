"""A run is an AReaL trial folder: the one holding perf_tracer/[<role>/]traces-r{rank}.jsonl (AReaL's trainer
configures its tracer with role "master"; single-controller workers write their own role folders)."""

from __future__ import annotations

import re
from pathlib import Path

RANK_FILE = re.compile(r"(traces|sessions)-r\d+\.jsonl")


def marks_run(path: Path) -> Path | None:
    """The trial folder above perf_tracer/ or session_tracer/ when `path` is one of their rank files."""
    if RANK_FILE.fullmatch(path.name):
        for folder in (path.parent, path.parent.parent):
            if folder.name in ("perf_tracer", "session_tracer"):
                return folder.parent
    return None
