"""What the launcher tests look for after a job: processes still working in a run directory."""

from __future__ import annotations

import os
from pathlib import Path


def processes_in(run_dir: Path) -> list[str]:
    """Pids of processes whose working directory is `run_dir` (a job's leftovers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(run_dir):
                found.append(pid)
        except OSError:
            continue
    return found
