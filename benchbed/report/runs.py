"""Load a stored run for a report: its record and trace, or for a run that failed before writing a trace, an
empty trace so the report still shows what the record says (status, error, log tail)."""

from __future__ import annotations

from pathlib import Path

from benchbed.record import RunRecord
from benchbed.store import read_record
from benchbed.trace import TRACE_FILENAME, Trace, TraceBuilder, TraceMeta, read_trace


def load_run(run_dir: Path) -> tuple[RunRecord, Trace]:
    """(record, trace) of a run directory; a failed or partial run without a trace gets an empty one."""
    run_dir = Path(run_dir)
    record = read_record(run_dir)
    trace_path = (run_dir if run_dir.is_dir() else run_dir.parent) / TRACE_FILENAME
    if trace_path.exists() or record.status == "succeeded":
        return record, read_trace(trace_path)
    why = (
        "the run is still going, or benchbed was killed outright (status started)" if record.status == "started"
        else f"the run {record.status} before one was written; the error below is from its record"
    )  # fmt: skip
    meta = TraceMeta(
        adapter=record.adapter.name,
        framework=record.adapter.framework,
        mode=record.adapter.mode,
        warnings=[f"no trace: {why}"],
        partial=True,
    )
    return record, TraceBuilder().build(meta)
