"""Render a spec into Miles' own command, `python3 train.py|train_async.py --flag value ...` in the checkout (argument
names of miles/utils/arguments.py at 31f1ca9; --fully-async needs train_async.py), dashboard on; pure."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.miles import MilesOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import ExperimentSpec, LaunchPlan


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: MilesOptions = spec.adapter_options("miles")
    w, r = spec.workload, spec.resources
    mode = "fully_async" if w.max_staleness else "sync"
    flags: dict[str, object] = {
        "--hf-checkpoint": w.model, "--rollout-batch-size": w.prompts_per_step, "--n-samples-per-prompt": w.group_size,
        "--global-batch-size": w.samples_per_step, "--rollout-max-response-len": w.max_response_tokens,
        "--num-rollout": w.steps, "--actor-num-nodes": -(-r.trainer_gpus // r.gpus_per_node),
        "--actor-num-gpus-per-node": min(r.trainer_gpus, r.gpus_per_node), "--num-gpus-per-node": r.gpus_per_node,
        "--rollout-num-gpus": r.trainer_gpus if r.colocated else r.generator_gpus,
        "--rollout-num-gpus-per-engine": opts.rollout_num_gpus_per_engine, "--prompt-data": opts.prompt_data,
        "--rollout-max-prompt-len": w.max_seq_len - w.max_response_tokens if w.max_seq_len else None,
        "--max-weight-staleness": w.max_staleness or None, "--dump-details": Path(run_dir),
    }  # fmt: skip
    argv = ["python3", "train_async.py" if w.max_staleness else "train.py"]
    argv += [str(a) for flag, value in flags.items() if value is not None for a in (flag, value)]
    argv += [
        "--use-miles-dashboard",
        *(["--fully-async"] if w.max_staleness else []),
        *(["--colocate"] if r.colocated else []),
    ]
    argv += opts.args
    handoff = Handoff(
        adapter="miles", mode=mode, argv=argv, samples_per_step=w.samples_per_step, group_size=w.group_size
    )
    return LaunchPlan(argv=argv, cwd=opts.checkout, files=handoff_files(handoff), timeout_s=spec.timeout_s,
                      description=f"Miles {mode}, {w.steps} steps")  # fmt: skip
