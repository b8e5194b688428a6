"""Render a spec into a tinker-cookbook recipe's own command, `python -m RECIPE key=value ...` (chz arguments of
tinker_cookbook/recipes/math_rl/train.py CLIConfig at 9dfcc3a), logging to the run directory; pure."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.tinker_cookbook import TinkerCookbookOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import ExperimentSpec, LaunchPlan


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: TinkerCookbookOptions = spec.adapter_options("tinker_cookbook")
    w = spec.workload
    mode = "async" if w.max_staleness else "sync"
    args: dict[str, object] = {
        "model_name": w.model, "env": opts.env, "lora_rank": opts.lora_rank, "learning_rate": opts.learning_rate,
        "group_size": w.group_size, "groups_per_batch": w.prompts_per_step, "max_tokens": w.max_response_tokens,
        "max_steps": w.steps, "log_path": run_dir, "wandb_name": spec.name, "behavior_if_log_dir_exists": "resume",
    }  # fmt: skip
    if w.max_staleness:
        args["max_steps_off_policy"] = w.max_staleness
    argv = ["python", "-m", opts.recipe, *(f"{k}={v}" for k, v in args.items()), *opts.overrides]
    handoff = Handoff(adapter="tinker_cookbook", mode=mode, argv=argv, samples_per_step=w.samples_per_step,
                      group_size=w.group_size)  # fmt: skip
    return LaunchPlan(argv=argv, cwd=opts.checkout, files=handoff_files(handoff), timeout_s=spec.timeout_s,
                      description=f"tinker-cookbook {mode}, {w.steps} steps")  # fmt: skip
