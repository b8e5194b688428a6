"""Render a spec into AReaL's YAML config (areal/api/cli_args.py GRPOConfig fields) and its launcher command,
`python3 -m areal.infra.launcher.<launcher> <entry> --config areal.yaml`, run in the run directory. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from benchbed.adapters.areal import ArealOptions

from benchbed.adapter import LaunchPlan
from benchbed.adapterkit.omegaconf_text import literal
from benchbed.errors import SpecError
from benchbed.spec import ExperimentSpec

CONFIG = "areal.yaml"
EXPERIMENT, TRIAL = "benchbed", "trial0"


def areal_config(spec: ExperimentSpec, run_dir: Path) -> dict[str, Any]:
    """The config AReaL's load_expr_config reads: the workload as AReaL's fields, the tracers on, and logs under
    the run directory (`<run_dir>/logs/<user>/benchbed/trial0`, the trial folder parse reads)."""
    opts: ArealOptions = spec.adapter_options("areal")
    w, r = spec.workload, spec.resources
    if r.colocated or r.trainer_gpus < 1 or r.generator_gpus < 1:
        raise SpecError(f"{spec.source}: the areal adapter renders AReaL's decoupled mode: colocated = false, "
                        "trainer_gpus and generator_gpus >= 1")  # fmt: skip
    names = {"experiment_name": EXPERIMENT, "trial_name": TRIAL}
    root = {**names, "fileroot": str(run_dir)}
    total = r.trainer_gpus + r.generator_gpus
    return literal({
        **names, "seed": 1, "total_train_epochs": 1, "total_train_steps": w.steps, "tokenizer_path": w.model,
        "cluster": {"n_nodes": -(-total // r.gpus_per_node), "n_gpus_per_node": r.gpus_per_node,
                    "fileroot": str(run_dir)},
        "rollout": {**root, "backend": f"{opts.rollout_backend}:d{r.generator_gpus}p1t1",
                    "max_concurrent_rollouts": opts.max_concurrent_rollouts or w.prompts_per_step,
                    "consumer_batch_size": w.prompts_per_step,
                    "max_head_offpolicyness": w.max_staleness if opts.max_head_offpolicyness is None
                    else opts.max_head_offpolicyness},
        "gconfig": {"n_samples": w.group_size, "max_new_tokens": w.max_response_tokens},
        "actor": {**names, "backend": f"{opts.actor_backend}:d{r.trainer_gpus}p1t1", "path": w.model,
                  "optimizer": {"lr": opts.lr}},
        "train_dataset": {"path": opts.dataset_path, "type": "rl", "batch_size": w.prompts_per_step},
        "saver": dict(root), "evaluator": dict(root), "recover": dict(root),
        "stats_logger": {**root, "wandb": {"mode": opts.wandb_mode}},
        "perf_tracer": {**root, "enabled": True, "save_interval": 1,
                        "session_tracer": {"enabled": True, "flush_threshold": 256}},
    })  # fmt: skip


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: ArealOptions = spec.adapter_options("areal")
    config = areal_config(spec, run_dir)
    argv = ["python3", "-m", f"areal.infra.launcher.{opts.launcher}", opts.entry, "--config", CONFIG]
    return LaunchPlan(argv=argv, files={CONFIG: yaml.safe_dump(config, sort_keys=False)}, timeout_s=spec.timeout_s,
                      description=f"AReaL GRPO ({opts.launcher} launcher), {spec.workload.steps} steps, "
                                  f"max_head_offpolicyness {config['rollout']['max_head_offpolicyness']}")  # fmt: skip
