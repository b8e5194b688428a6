"""Render a spec into the history loop's command line; pure."""

from __future__ import annotations

import sys
from pathlib import Path

from benchbed.adapters.example_history import HistoryLoopOptions
from benchbed.adapters.example_history.discover import HISTORY

from benchbed.api import ExperimentSpec, LaunchPlan


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: HistoryLoopOptions = spec.adapter_options("example_history")
    w = spec.workload
    argv = [sys.executable, "-m", "benchbed.adapters.example_history.histloop", "--steps", str(w.steps),
            "--samples", str(w.samples_per_step), "--update-s", str(opts.update_s), "--seed", str(opts.seed),
            "--out", HISTORY]  # fmt: skip
    return LaunchPlan(argv=argv, timeout_s=spec.timeout_s, description=f"history loop, {w.steps} steps")
