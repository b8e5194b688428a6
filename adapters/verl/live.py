"""`benchbed watch` of a verl run: the lines verl's file logger appends to metrics.jsonl (VERL_FILE_LOGGER_PATH, set
by the renderer), each batch of new lines read through the build_trace the finished run's parse uses, with the plan
benchbed left in the run directory (its mode and batch)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.verl.parse import Inputs, build_trace
from benchbed.adapters.verl.render import METRICS_FILE

from benchbed.adapterkit.handoff import read_handoff
from benchbed.adapterkit.live_jsonl import JsonlStepsReader, Rows
from benchbed.adapterkit.shared import LiveFigures
from benchbed.adapterkit.step_columns import StepColumns
from benchbed.api import Trace


def verl_reader(run_dir: Path, figures: LiveFigures) -> JsonlStepsReader:
    """The live reader of a verl run directory."""
    warnings: list[str] = []
    plan = read_handoff(Path(run_dir), warnings)

    def to_trace(rows: Rows, path: str) -> Trace:
        records = StepColumns()
        for step, data, line in rows:
            records.add(step, data, path, line)
        return build_trace(Inputs(records=records, warnings=[], config=None, timing_source=path, sources=[path],
                                  plan=plan))  # fmt: skip

    return JsonlStepsReader(Path(run_dir), figures, METRICS_FILE, to_trace, "verl", warnings)
