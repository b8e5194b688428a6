"""Render a spec into the toy loop's command line, as a user would type it; pure: nothing is imported or run."""

from __future__ import annotations

import sys
from pathlib import Path

from benchbed.adapters.example.logformat import LOG
from benchbed.adapters.example.options import ExampleOptions

from benchbed.api import ExperimentSpec, LaunchPlan


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    """`python -m benchbed.adapters.example.toyloop …` with the workload and the spec's `[example]` table."""
    opts: ExampleOptions = spec.adapter_options("example")
    w = spec.workload
    argv = [sys.executable, "-m", "benchbed.adapters.example.toyloop", "--steps", str(w.steps),
            "--prompts", str(w.prompts_per_step), "--group-size", str(w.group_size), "--seed", str(opts.seed),
            "--update-s", str(opts.update_s), "--sync-s", str(opts.sync_s), "--out", LOG]  # fmt: skip
    return LaunchPlan(argv=argv, timeout_s=spec.timeout_s, description=f"toy loop, {w.steps} steps")
