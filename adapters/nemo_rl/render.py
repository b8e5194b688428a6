"""Render a spec into NeMo-RL's own command: `uv run python examples/run_grpo.py --config BASE.yaml key=value ...`
(Hydra-style overrides of the YAML's keys, as NeMo-RL 0.6.0's README runs it), in the NeMo-RL checkout; pure."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.nemo_rl import NemoRLOptions

from benchbed.adapterkit.hydra import hydra_overrides
from benchbed.api import AdapterError, ExperimentSpec, LaunchPlan

GEN = "policy.generation.colocated"


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: NemoRLOptions = spec.adapter_options("nemo_rl")
    argv = ["uv", "run", "python", "examples/run_grpo.py", "--config", opts.config]
    argv += hydra_overrides(overrides(spec, opts, run_dir), "[nemo_rl]")
    what = f"NeMo-RL {'async' if spec.workload.max_staleness else 'sync'} GRPO, {spec.workload.steps} steps"
    return LaunchPlan(argv=argv + opts.overrides, cwd=opts.checkout, timeout_s=spec.timeout_s, description=what)


def overrides(spec: ExperimentSpec, opts: NemoRLOptions, run_dir: Path) -> dict[str, object]:
    """The YAML keys the spec sets, in NeMo-RL's names (examples/configs/grpo_math_1B.yaml)."""
    w = spec.workload
    out: dict[str, object] = {
        "policy.model_name": w.model, "grpo.num_prompts_per_step": w.prompts_per_step,
        "grpo.num_generations_per_prompt": w.group_size, "grpo.max_num_steps": w.steps,
        "policy.train_global_batch_size": w.samples_per_step, "policy.generation.max_new_tokens": w.max_response_tokens,
        "policy.max_total_sequence_length": w.max_seq_len or w.max_response_tokens, "grpo.val_period": opts.val_period,
        "checkpointing.enabled": opts.save_period > 0, "checkpointing.save_period": max(opts.save_period, 1),
        "checkpointing.checkpoint_dir": run_dir / "checkpoints", "logger.log_dir": run_dir / "logs",
        "logger.tensorboard_enabled": True,
    }  # fmt: skip
    if w.max_staleness:  # NeMo-RL's async GRPO guide: the age bound, vLLM's async engine, importance sampling
        out["grpo.async_grpo.enabled"] = True
        out["grpo.async_grpo.max_trajectory_age_steps"] = w.max_staleness
        out["policy.generation.vllm_cfg.async_engine"] = True
        out["loss_fn.use_importance_sampling_correction"] = True
    r = spec.resources
    return out | placement(r.trainer_gpus, r.generator_gpus, r.gpus_per_node, r.colocated)


def placement(trainer: int, generator: int, per_node: int, colocated: bool) -> dict[str, object]:
    """cluster.* counts every GPU; a separate generator takes whole nodes of it, or part of a single node."""
    if colocated:
        return {f"{GEN}.enabled": True, "cluster.num_nodes": -(-trainer // per_node),
                "cluster.gpus_per_node": min(trainer, per_node)}  # fmt: skip
    if trainer + generator <= per_node:
        return {f"{GEN}.enabled": False, "cluster.num_nodes": 1, "cluster.gpus_per_node": trainer + generator,
                f"{GEN}.resources.gpus_per_node": generator}  # fmt: skip
    if trainer % per_node or generator % per_node:
        raise AdapterError(
            f"nemo_rl: {trainer} trainer + {generator} generator GPUs on {per_node}-GPU nodes; NeMo-RL gives a "
            "separate generator whole nodes, so both must be multiples of gpus_per_node"
        )
    return {f"{GEN}.enabled": False, "cluster.num_nodes": (trainer + generator) // per_node,
            "cluster.gpus_per_node": per_node, f"{GEN}.resources.num_nodes": generator // per_node,
            f"{GEN}.resources.gpus_per_node": per_node}  # fmt: skip
