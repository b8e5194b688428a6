"""Render a spec into OpenRLHF's launch as its README gives it: `ray job submit -- python3 -m
openrlhf.cli.train_ppo_ray` with the dotted flags of OpenRLHF@3c3be62; pure. The flags cannot be checked against
OpenRLHF's parser here: it is built inside train_ppo_ray's `__main__`, after imports of ray, torch and vLLM."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.openrlhf.options import OpenRLHFOptions

from benchbed.adapter import LaunchPlan
from benchbed.errors import SpecError
from benchbed.spec import ExperimentSpec


def flags(spec: ExperimentSpec, run_dir: Path) -> list[str]:
    """train_ppo_ray's arguments: [workload] and [resources] as OpenRLHF names them, then the [openrlhf] table."""
    opts: OpenRLHFOptions = spec.adapter_options("openrlhf")
    w, r = spec.workload, spec.resources
    tp, per_node = opts.vllm_tensor_parallel_size, min(r.trainer_gpus, r.gpus_per_node)
    if opts.prompt_data is None or opts.remote_rm_url is None:
        raise SpecError(f"{spec.source}: name the prompts and the reward: openrlhf.prompt_data, openrlhf.remote_rm_url")
    if r.generator_gpus % tp or r.trainer_gpus % per_node:
        raise SpecError(f"{spec.source}: generator_gpus must be a multiple of openrlhf.vllm_tensor_parallel_size ({tp})"
                        " and trainer_gpus whole nodes")  # fmt: skip
    out = {"--actor.model_name_or_path": opts.model_path or w.model, "--data.prompt_dataset": opts.prompt_data,
           "--data.input_key": opts.input_key, "--data.label_key": opts.label_key,
           "--reward.remote_url": opts.remote_rm_url, "--algo.advantage.estimator": opts.estimator,
           "--rollout.batch_size": w.prompts_per_step, "--rollout.n_samples_per_prompt": w.group_size,
           "--train.batch_size": w.samples_per_step, "--rollout.max_new_tokens": w.max_response_tokens,
           "--data.max_samples": w.prompts_per_step * w.steps, "--train.num_episodes": 1,
           "--actor.num_nodes": r.trainer_gpus // per_node, "--actor.num_gpus_per_node": per_node,
           "--vllm.num_engines": r.generator_gpus // tp, "--vllm.tensor_parallel_size": tp,
           "--ds.zero_stage": opts.zero_stage, "--ds.param_dtype": "bf16", "--actor.adam.lr": opts.learning_rate,
           "--algo.kl.init_coef": opts.kl_coef, "--ckpt.save_steps": opts.save_steps,
           "--ckpt.path": str(run_dir / "ckpt"), "--ckpt.output_dir": str(run_dir / "ckpt"),
           "--logger.logging_steps": 1, "--logger.tensorboard_dir": str(run_dir / "tensorboard"),
           "--logger.wandb.run_name": spec.name}  # fmt: skip
    if w.max_seq_len:
        out["--data.max_len"] = w.max_seq_len
    if opts.kl_coef > 0:
        out |= {"--algo.kl.estimator": "k3", "--ref.num_nodes": r.trainer_gpus // per_node,
                "--ref.num_gpus_per_node": per_node}  # fmt: skip
    argv = [token for flag, value in out.items() for token in (flag, str(value))]
    switches = ["--data.apply_chat_template", "--ds.packing_samples", "--actor.gradient_checkpointing_enable"]
    switches += ["--algo.kl.use_loss"] if opts.kl_coef > 0 else []
    if r.colocated:
        switches += ["--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep"]
    if w.max_staleness > 0:  # the generator runs up to async_queue_size batches ahead of the trainer
        argv += ["--train.async_queue_size", str(w.max_staleness)]
        switches += ["--train.async_enable"] + (["--train.partial_rollout_enable"] if opts.partial_rollout else [])
    elif opts.partial_rollout:
        raise SpecError(f"{spec.source}: openrlhf.partial_rollout needs asynchronous training (max_staleness > 0)")
    if r.colocated and w.max_staleness > 0:
        raise SpecError(f"{spec.source}: OpenRLHF's async training does not colocate vLLM (--vllm.enable_sleep)")
    return argv + switches


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    """The job as OpenRLHF's README submits it (`--launcher ray --ray-working-dir` uploads a checkout)."""
    opts: OpenRLHFOptions = spec.adapter_options("openrlhf")
    argv = ["ray", "job", "submit", "--address", opts.ray_address, "--", "python3", "-m", "openrlhf.cli.train_ppo_ray"]
    mode = "async" if spec.workload.max_staleness else "sync"
    description = f"OpenRLHF {mode} GRPO, {spec.workload.steps} steps"
    return LaunchPlan(argv=argv + flags(spec, Path(run_dir)), timeout_s=spec.timeout_s, description=description)
