"""render(spec, run_dir): the verl command line a user would type (entry module + Hydra overrides) and its env."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchbed.adapters.verl import cpu_profile
from benchbed.adapters.verl.options import ENTRY_MODULES, SEPARATE_POOL_MODES, VerlOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.adapterkit.hydra import hydra_overrides
from benchbed.adapterkit.presets import Preset, choose_preset, load_presets
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

PRESETS_FILE = Path(__file__).with_name("presets.toml")
METRICS_FILE = "metrics.jsonl"
VERL_DEFAULT_ROLLOUT_TP = 2  # rollout/rollout.yaml tensor_model_parallel_size in verl 0.9.1
VERL_DEFAULT_PROMPT_LEN = 512  # data.max_prompt_length default
VERL_DEFAULT_TOKEN_BUDGET = 16384  # actor.ppo_max_token_len_per_gpu default


def preset_for(model: str, name: str | None) -> Preset | None:
    """The Megatron preset named in [verl].preset ('none' for none), else the one matching the model id."""
    return choose_preset(load_presets(PRESETS_FILE), model, name, "verl")


def _split_gpus(gpus: int, per_node: int, what: str) -> tuple[int, int]:
    """(nnodes, n_gpus_per_node) for a pool of `gpus`."""
    if gpus <= 0:
        raise SpecError(f"resources: {what} needs at least one GPU (got {gpus})")
    if gpus <= per_node:
        return 1, gpus
    if gpus % per_node:
        raise SpecError(f"resources: {what} GPUs ({gpus}) must be a multiple of gpus_per_node ({per_node})")
    return gpus // per_node, per_node


def _python(python: str) -> str:
    """The environment's python as given, a path with a folder in it made absolute (verl runs in the run
    directory, so `.envs/verl-cpu/bin/python` is taken from where benchbed was started)."""
    return str(Path(python).absolute()) if "/" in python else python


def default_mode(spec: ExperimentSpec) -> str:
    if spec.resources.colocated:
        return "v1_sync" if spec.workload.max_staleness == 0 else "v1_colocate_async"
    return "v1_separate_async"


def _staleness(mode: str, staleness: int, ov: dict[str, Any]) -> None:
    """max_staleness -> the mode's own knob (or a clear error where the mode fixes it)."""
    if mode in ("v1_sync", "v0") and staleness != 0:
        raise SpecError(f"workload.max_staleness={staleness}, but verl {mode} is synchronous; set it to 0")
    if mode == "one_step_off" and staleness != 1:
        raise SpecError(
            f"workload.max_staleness={staleness}, but one_step_off trains exactly one version behind; set 1"
        )
    if mode in ("v1_colocate_async", "v1_separate_async"):
        # ReplayBuffer drops a sample when global_steps - prompt_global_steps + 1 > threshold,
        # i.e. it keeps v_train - v_start <= threshold - 1.
        ov["trainer.v1.sampler.max_off_policy_threshold"] = staleness + 1
        ov["trainer.v1.sampler.max_off_policy_strategy"] = "drop"
    if mode == "fully_async":
        # extra samples in flight, in multiples of one sync cycle's batch: the bound on version lag
        ov["async_training.staleness_threshold"] = float(staleness)


def _parallelism(spec: ExperimentSpec, opts: VerlOptions, ov: dict[str, Any]) -> tuple[str | None, int]:
    """Megatron preset overrides; returns (preset name, rollout tensor-parallel size)."""
    found = preset_for(spec.workload.model, opts.preset)
    engine = opts.engine or ("megatron" if found else "fsdp")
    if engine == "megatron":
        ov["model_engine"] = "megatron"
    if found is None:
        return None, VERL_DEFAULT_ROLLOUT_TP
    preset = found.values
    if engine != "megatron":
        raise SpecError(f"[verl] preset {found.name!r} is a Megatron preset; drop engine='fsdp' or set preset='none'")
    for key, value in preset["actor"].items():
        ov[f"actor_rollout_ref.actor.megatron.{key}"] = value
        if key != "optimizer_offload":  # the reference policy has no optimizer
            ov[f"actor_rollout_ref.ref.megatron.{key}"] = value
    for key, value in preset["rollout"].items():
        ov[f"actor_rollout_ref.rollout.{key}"] = value
    if "nccl_timeout" in preset:
        ov["actor_rollout_ref.nccl_timeout"] = preset["nccl_timeout"]
    return found.name, int(preset["rollout"].get("tensor_model_parallel_size", VERL_DEFAULT_ROLLOUT_TP))


def _check_model_parallel(ov: dict[str, Any], trainer_gpus: int) -> None:
    """Megatron needs the trainer GPUs to be a multiple of TP x PP x CP (after passthrough overrides)."""
    if ov.get("model_engine") != "megatron":
        return
    size = 1
    for dim in ("tensor", "pipeline", "context"):
        value = (
            ov.get(f"actor_rollout_ref.actor.megatron.{dim}_model_parallel_size", 1)
            if dim != "context"
            else (ov.get("actor_rollout_ref.actor.megatron.context_parallel_size", 1))
        )
        size *= int(value or 1)
    if trainer_gpus % size:
        raise SpecError(
            f"Megatron TP x PP x CP = {size} does not divide resources.trainer_gpus={trainer_gpus}; "
            "change the GPU count or the [verl] preset / overrides"
        )


def _pools(spec: ExperimentSpec, mode: str, ov: dict[str, Any]) -> int:
    """Trainer and rollout node/GPU counts; returns the GPUs that run rollout."""
    res = spec.resources
    ov["trainer.nnodes"], ov["trainer.n_gpus_per_node"] = _split_gpus(res.trainer_gpus, res.gpus_per_node, "trainer")
    if mode not in SEPARATE_POOL_MODES:
        return res.trainer_gpus
    nodes, per_node = _split_gpus(res.generator_gpus, res.gpus_per_node, "generator (rollout)")
    prefix = "actor_rollout_ref.rollout" if mode == "v1_separate_async" else "rollout"
    ov[f"{prefix}.nnodes"], ov[f"{prefix}.n_gpus_per_node"] = nodes, per_node
    if mode == "v1_separate_async":
        ov["actor_rollout_ref.rollout.checkpoint_engine.backend"] = "nccl"
    return res.generator_gpus


def _batching(spec: ExperimentSpec, mode: str, opts: VerlOptions, ov: dict[str, Any]) -> int | None:
    """Mini-batch and sync-cycle sizes; returns samples per fully_async local step (else None)."""
    w = spec.workload
    if mode == "fully_async":
        trigger = opts.trigger_parameter_sync_step
        mini = opts.ppo_mini_batch_size or w.prompts_per_step // trigger
        if mini * trigger != w.prompts_per_step:
            raise SpecError(
                f"fully_async: prompts_per_step ({w.prompts_per_step}) must equal ppo_mini_batch_size ({mini}) x "
                f"trigger_parameter_sync_step ({trigger})"
            )
        ov["actor_rollout_ref.actor.ppo_mini_batch_size"] = mini
        ov["async_training.trigger_parameter_sync_step"] = trigger
        ov["async_training.require_batches"] = 1
        ov["rollout.total_rollout_steps"] = w.steps * w.prompts_per_step
        return mini * w.group_size
    mini = opts.ppo_mini_batch_size or w.prompts_per_step
    if w.prompts_per_step % mini:
        raise SpecError(f"[verl] ppo_mini_batch_size ({mini}) must divide prompts_per_step ({w.prompts_per_step})")
    ov["actor_rollout_ref.actor.ppo_mini_batch_size"] = mini
    if mode == "v1_separate_async":
        ov["trainer.v1.separate_async.parameter_sync_step"] = w.prompts_per_step // mini
    return None


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    """The LaunchPlan for a GRPO run of `spec` whose artifacts all land in `run_dir`."""
    opts: VerlOptions = spec.adapter_options("verl")
    w = spec.workload
    mode = opts.mode or default_mode(spec)
    run_dir = run_dir.resolve()
    cpu = opts.profile == "cpu"
    if cpu:
        cpu_profile.check(spec, opts, mode)
    ov: dict[str, Any] = {}
    if mode in ("fully_async", "one_step_off"):
        ov["hydra.searchpath"] = ["pkg://verl.trainer.config"]  # their configs name it cwd-relative
    preset, rollout_tp = (None, 1) if cpu else _parallelism(spec, opts, ov)
    ov["algorithm.adv_estimator"] = "grpo"
    ov["algorithm.use_kl_in_reward"] = False
    ov["actor_rollout_ref.actor.use_kl_loss"] = True
    ov["actor_rollout_ref.actor.kl_loss_coef"] = 0.001
    ov["actor_rollout_ref.model.path"] = w.model
    ov["actor_rollout_ref.rollout.name"] = opts.rollout_backend
    ov["actor_rollout_ref.rollout.n"] = w.group_size
    ov["data.train_batch_size"] = w.prompts_per_step
    ov["data.max_response_length"] = w.max_response_tokens
    if w.max_seq_len is not None:
        if w.max_seq_len <= w.max_response_tokens:
            raise SpecError(f"workload.max_seq_len ({w.max_seq_len}) must exceed max_response_tokens")
        ov["data.max_prompt_length"] = w.max_seq_len - w.max_response_tokens
        ov["actor_rollout_ref.rollout.max_model_len"] = w.max_seq_len
    # token-budget micro-batching (ref and rollout log-prob follow the actor's settings by interpolation);
    # a budget below one full sequence would fail at the first long sample
    seq_len = w.max_seq_len or (w.max_response_tokens + VERL_DEFAULT_PROMPT_LEN)
    ov["actor_rollout_ref.actor.use_dynamic_bsz"] = True
    ov["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"] = max(VERL_DEFAULT_TOKEN_BUDGET, seq_len)
    for key, value in (("data.train_files", opts.train_files), ("data.val_files", opts.val_files)):
        if value:
            ov[key] = value
    if mode.startswith("v1_"):
        ov["trainer.use_v1"] = True
        ov["trainer.v1.trainer_mode"] = mode.removeprefix("v1_")
    elif mode == "v0":
        ov["trainer.use_v1"] = False
    _staleness(mode, w.max_staleness, ov)
    local_samples = _batching(spec, mode, opts, ov)
    rollout_gpus = 1 if cpu else _pools(spec, mode, ov)
    concurrency = opts.concurrency
    if concurrency is not None:
        tp_key = "actor_rollout_ref.rollout.tensor_model_parallel_size"
        replicas = max(1, rollout_gpus // int(opts.overrides.get(tp_key, rollout_tp)))
        per_replica = math.ceil(concurrency / replicas)
        ov["actor_rollout_ref.rollout.max_num_seqs"] = per_replica
        if mode == "fully_async":
            ov["async_training.concurrent_samples_per_replica"] = per_replica
    if spec.sandbox.backend != "none" and not opts.tool_config:
        raise SpecError(
            f"sandbox.backend={spec.sandbox.backend!r}: verl reaches sandboxes through a tool; set [verl] tool_config "
            "to a verl tool YAML whose tool creates the sandboxes"
        )
    if opts.tool_config:
        ov["actor_rollout_ref.rollout.multi_turn.enable"] = True
        ov["actor_rollout_ref.rollout.multi_turn.tool_config_path"] = str(Path(opts.tool_config).resolve())
        ov["actor_rollout_ref.rollout.agent.default_agent_loop"] = "tool_agent"
    loggers = list(dict.fromkeys([*opts.loggers, "file"]))
    ov["trainer.logger"] = loggers
    ov["trainer.project_name"] = "benchbed"
    ov["trainer.experiment_name"] = spec.spec_id
    ov["trainer.total_training_steps"] = w.steps
    ov["trainer.save_freq"] = opts.save_freq
    ov["trainer.test_freq"] = opts.test_freq
    ov["trainer.val_before_train"] = opts.val_before_train
    ov["trainer.rollout_data_dir"] = str(run_dir / "rollout_data")
    ov["trainer.default_local_dir"] = str(run_dir / "checkpoints")
    ov["hydra.run.dir"] = str(run_dir / "hydra")
    python = _python(opts.python)
    if cpu:
        ov.update(cpu_profile.overrides(opts, python, run_dir))
    ov.update(opts.overrides)
    if not cpu:
        _check_model_parallel(ov, spec.resources.trainer_gpus)
    entry = ENTRY_MODULES[mode]
    hydra_args = hydra_overrides(ov, "[verl] overrides")
    argv = cpu_profile.argv(python, run_dir, entry, hydra_args) if cpu else [python, "-m", entry, *hydra_args]
    env = {
        "VERL_FILE_LOGGER_PATH": str(run_dir / METRICS_FILE),
        "RAY_DEDUP_LOGS": "0",  # keep every line: de-duplication mangles the printed config
        **(cpu_profile.environment(run_dir) if cpu else {}),
        **opts.env,
    }
    handoff = Handoff(
        adapter="verl", mode=mode, argv=argv, samples_per_step=w.samples_per_step, group_size=w.group_size,
        concurrency=concurrency, entry=entry, preset=preset, samples_per_local_step=local_samples,
        profile=opts.profile,
    )  # fmt: skip
    return LaunchPlan(
        argv=argv,
        env=env,
        cwd=None,
        files={**handoff_files(handoff), **(cpu_profile.files(spec, opts) if cpu else {})},
        captures={"pip-freeze.txt": [python, "-m", "pip", "freeze"]},  # verl never prints its version
        timeout_s=spec.timeout_s,
        description=(
            f"verl {mode} GRPO on {w.model} ({w.prompts_per_step} prompts x G={w.group_size}, "
            f"{'preset ' + preset if preset else 'no Megatron preset'}, rollout {opts.rollout_backend}"
            f"{', CPU profile' if cpu else ''})"
        ),
    )
