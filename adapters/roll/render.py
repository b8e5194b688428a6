"""Render a spec into a ROLL RLVR pipeline config (Hydra YAML) and the launch
`python examples/start_rlvr_pipeline.py --config_path REL --config_name benchbed_rlvr` from the ROLL checkout; pure.
The config is the template benchbed_rlvr.yaml beside this file, RLVRConfig's keys at ROLL@8eb27cc kept as data: ROLL
is not on PyPI, so its dataclasses cannot check the config here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchbed.adapters.roll import RollOptions

from benchbed.adapterkit.templates import render_template, spec_values, yaml_text
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

CONFIG = "benchbed_rlvr"
TEMPLATE = Path(__file__).with_name(f"{CONFIG}.yaml")


def config(spec: ExperimentSpec, run_dir: Path) -> dict[str, Any]:
    """The pipeline config: the template filled with [workload], [resources], the [roll] table and the GPU and
    batch arithmetic, after the checks that the spec makes a ROLL pipeline."""
    o: RollOptions = spec.adapter_options("roll")
    w, r = spec.workload, spec.resources
    if o.roll_dir is None or o.train_file is None:
        raise SpecError(f"{spec.source}: name the ROLL checkout and the data: roll.roll_dir, roll.train_file")
    model_parallel = o.tensor_parallel * o.pipeline_parallel
    dp = r.trainer_gpus // model_parallel
    if not dp or r.trainer_gpus % model_parallel or w.samples_per_step % dp:
        raise SpecError(
            f"{spec.source}: trainer_gpus ({r.trainer_gpus}) / (tensor x pipeline parallel) must divide the "
            f"{w.samples_per_step} samples per step"
        )
    if r.generator_gpus % o.infer_tensor_parallel or (r.colocated and w.max_staleness):
        raise SpecError(
            f"{spec.source}: generator_gpus must be a multiple of roll.infer_tensor_parallel, and an asynchronous "
            "ROLL pipeline (max_staleness > 0) needs its own generator GPUs"
        )
    first = 0 if r.colocated else r.trainer_gpus  # the generator shares the trainer's GPUs or takes the next ones
    values = spec_values(spec, run_dir, infer_first=first, infer_end=first + r.generator_gpus)
    values["prompt_length"] = w.max_seq_len - w.max_response_tokens if w.max_seq_len else 2048
    values["gradient_accumulation_steps"] = w.samples_per_step // dp  # one optimizer step per pipeline step
    return render_template(TEMPLATE, values)


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    text = yaml_text(config(spec, run_dir))
    roll = Path(str(spec.adapter_options("roll").roll_dir)).expanduser().resolve()  # config() refused None
    # Hydra's initialize() takes config_path relative to the script's folder, examples/
    relative = os.path.relpath(Path(run_dir).resolve(), roll / "examples")
    argv = ["python", "examples/start_rlvr_pipeline.py", "--config_path", relative, "--config_name", CONFIG]
    mode = "async" if spec.workload.max_staleness else "sync"
    files = {f"{CONFIG}.yaml": f"# ROLL RLVR pipeline config rendered by benchbed from {spec.source}\n{text}"}
    description = f"ROLL {mode} RLVR pipeline, {spec.workload.steps} steps"
    return LaunchPlan(argv=argv, cwd=str(roll), files=files, timeout_s=spec.timeout_s, description=description)
