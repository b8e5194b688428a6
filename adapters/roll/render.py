"""Render a spec into a ROLL RLVR pipeline config (Hydra YAML) and the launch
`python examples/start_rlvr_pipeline.py --config_path REL --config_name benchbed_rlvr` from the ROLL checkout; pure.
Config keys are those of ROLL@8eb27cc (RLVRConfig), kept as data: ROLL is not on PyPI, so its dataclasses cannot
check the config here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchbed.adapters.roll.options import RollOptions

from benchbed.adapter import LaunchPlan
from benchbed.errors import SpecError
from benchbed.spec import ExperimentSpec

CONFIG = "benchbed_rlvr"


def config(spec: ExperimentSpec, run_dir: Path) -> dict[str, Any]:
    """The pipeline config: [workload] and [resources] as RLVRConfig names them, then the [roll] table."""
    o: RollOptions = spec.adapter_options("roll")
    w, r = spec.workload, spec.resources
    if o.roll_dir is None or o.train_file is None:
        raise SpecError(f"{spec.source}: name the ROLL checkout and the data: roll.roll_dir, roll.train_file")
    dp = r.trainer_gpus // (o.tensor_parallel * o.pipeline_parallel)
    if not dp or r.trainer_gpus % (o.tensor_parallel * o.pipeline_parallel) or w.samples_per_step % dp:
        raise SpecError(f"{spec.source}: trainer_gpus ({r.trainer_gpus}) / (tensor x pipeline parallel) must divide "
                        f"the {w.samples_per_step} samples per step")  # fmt: skip
    if r.generator_gpus % o.infer_tensor_parallel or (r.colocated and w.max_staleness):
        raise SpecError(f"{spec.source}: generator_gpus must be a multiple of roll.infer_tensor_parallel, and an "
                        "asynchronous ROLL pipeline (max_staleness > 0) needs its own generator GPUs")  # fmt: skip
    first = 0 if r.colocated else r.trainer_gpus
    train, infer = f"list(range(0,{r.trainer_gpus}))", f"list(range({first},{first + r.generator_gpus}))"
    megatron = {"tensor_model_parallel_size": o.tensor_parallel, "pipeline_model_parallel_size": o.pipeline_parallel,
                "expert_model_parallel_size": o.expert_parallel}  # fmt: skip
    data = {"template": o.template}
    return {"hydra": {"run": {"dir": "."}, "output_subdir": None}, "exp_name": spec.name, "seed": o.seed,
            "output_dir": str(run_dir / "output"), "logging_dir": str(run_dir / "output" / "logs"),
            "checkpoint_config": {"type": "file_system", "output_dir": str(run_dir / "checkpoints")},
            "track_with": "tensorboard", "tracker_kwargs": {"log_dir": str(run_dir / "tensorboard")},
            "num_gpus_per_node": r.gpus_per_node, "max_steps": w.steps, "save_steps": o.save_steps,
            "logging_steps": 1, "rollout_batch_size": w.prompts_per_step,
            "num_return_sequences_in_group": w.group_size, "response_length": w.max_response_tokens,
            "prompt_length": (w.max_seq_len or 2048 + w.max_response_tokens) - w.max_response_tokens,
            "async_generation_ratio": w.max_staleness, "adv_estimator": o.adv_estimator,
            "pretrain": w.model, "reward_pretrain": w.model,
            "actor_train": {"model_args": {"dtype": "bf16"}, "device_mapping": train,
                            "training_args": {"learning_rate": o.learning_rate, "per_device_train_batch_size": 1,
                                              "gradient_accumulation_steps": w.samples_per_step // dp},
                            "data_args": {**data, "file_name": [o.train_file], "messages": "messages",
                                          "domain_interleave_probs": {o.domain: 1.0}},
                            "strategy_args": {"strategy_name": "megatron_train", "strategy_config": megatron}},
            "actor_infer": {"model_args": {"dtype": "bf16"}, "data_args": data, "device_mapping": infer,
                            "num_gpus_per_worker": o.infer_tensor_parallel,
                            "generating_args": {"max_new_tokens": w.max_response_tokens,
                                                "num_return_sequences": w.group_size},
                            "strategy_args": {"strategy_name": o.infer_backend,
                                              "strategy_config": {"tensor_parallel_size": o.infer_tensor_parallel}}},
            "reference": {"model_args": {"dtype": "bf16"}, "data_args": data, "device_mapping": train,
                          "strategy_args": {"strategy_name": "megatron_infer", "strategy_config": megatron}},
            "rewards": {o.domain: {"worker_cls": o.reward_worker, "tag_included": o.tags, "data_args": data,
                                   "model_args": {"model_name_or_path": w.model}}}}  # fmt: skip


def yaml_lines(data: dict[str, Any], pad: str = "") -> list[str]:
    """Block YAML of nested tables, values as JSON (which YAML reads), floats with a point (PyYAML reads 1e-06 as a
    string)."""
    out: list[str] = []
    for key, value in data.items():
        text = json.dumps(value)
        if isinstance(value, float) and "e" in text and "." not in text:
            text = text.replace("e", ".0e")
        out += (
            [f"{pad}{key}:", *yaml_lines(value, pad + "  ")]
            if value and isinstance(value, dict)
            else [f"{pad}{key}: {text}"]
        )
    return out


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    lines = [f"# ROLL RLVR pipeline config rendered by benchbed from {spec.source}", *yaml_lines(config(spec, run_dir))]
    roll = Path(str(spec.adapter_options("roll").roll_dir)).expanduser().resolve()  # config() refused None
    # Hydra's initialize() takes config_path relative to the script's folder, examples/
    argv = ["python", "examples/start_rlvr_pipeline.py", "--config_path",
            os.path.relpath(Path(run_dir).resolve(), roll / "examples"), "--config_name", CONFIG]  # fmt: skip
    mode = "async" if spec.workload.max_staleness else "sync"
    files = {f"{CONFIG}.yaml": "\n".join(lines) + "\n"}
    description = f"ROLL {mode} RLVR pipeline, {spec.workload.steps} steps"
    return LaunchPlan(argv=argv, cwd=str(roll), files=files, timeout_s=spec.timeout_s, description=description)
