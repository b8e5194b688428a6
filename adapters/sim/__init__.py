"""Adapter `sim`: the discrete-event simulator, launched as a subprocess like any framework."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchbed.adapterkit.shared import redact_mapping
from benchbed.api import TRACE_FILENAME, Adapter, ExperimentSpec, LaunchPlan, NotThisFrameworkError, Trace, read_trace
from benchbed.sim import sim_params
from benchbed.sim.config import SimConfig

SPEC_FILENAME = "sim-spec.json"


class SimAdapter(Adapter):
    """Renders `python -m benchbed.sim` and reads back the trace it writes."""

    name = "sim"
    options_model = SimConfig

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        params = sim_params(spec)  # validate before anything starts
        data = spec.model_dump(mode="json")
        if spec.repeat:  # each repeat simulates with its own seed: sim.seed + repeat index
            table = data.setdefault(self.table, {})
            table["seed"] = params.config.seed + spec.repeat
        return LaunchPlan(
            argv=[sys.executable, "-m", "benchbed.sim", "--spec", SPEC_FILENAME, "--out", "."],
            files={SPEC_FILENAME: json.dumps(redact_mapping(data), indent=2)},  # stored in the run, like the record
            timeout_s=spec.timeout_s,
            description=f"simulate {spec.workload.steps} steps ({params.config.mode})",
        )

    def parse(self, path: Path) -> Trace:
        path = Path(path)
        trace_path = path / TRACE_FILENAME if path.is_dir() else path
        if not trace_path.exists():
            raise NotThisFrameworkError(f"not a sim run: {path} has no {TRACE_FILENAME}")
        if trace_path.suffix != ".parquet":
            raise NotThisFrameworkError(f"not a sim run: {trace_path} is not a parquet trace")
        trace = read_trace(trace_path)
        if trace.meta.adapter != self.name:
            raise NotThisFrameworkError(f"not a sim run: {trace_path} was written by {trace.meta.adapter!r}")
        return trace
