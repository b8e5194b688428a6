"""A Miles run is the `--dump-details` folder whose `dashboard/` holds the collector's `metrics.jsonl`."""

from __future__ import annotations

from pathlib import Path

DASHBOARD, METRICS = "dashboard", "metrics.jsonl"  # {dump_details}/dashboard/, its metrics stream


def marks_run(path: Path) -> Path | None:
    """The dump-details folder above a dashboard's metrics stream."""
    return path.parent.parent if path.name == METRICS and path.parent.name == DASHBOARD else None
