"""Render a spec into rLLM's own command, `python -m ENTRYPOINT rllm/backend=tinker key=value ...` (Hydra overrides of
its config, as examples/countdown/unified_trainer/train_countdown_unified_tinker_async.sh runs it), in the checkout;
pure. Names at rllm-org/rllm 9beb6e0f676a46d38858991fd79ac5f8e0b16d4c (rllm/trainer/config/rllm/base.yaml and
rllm/backend/tinker.yaml). The Tinker backend trains and samples on Tinker's service: `[resources]` are not placed."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.rllm import RllmOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.adapterkit.hydra import hydra_overrides
from benchbed.api import ExperimentSpec, LaunchPlan


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: RllmOptions = spec.adapter_options("rllm")
    w, mode = spec.workload, "fully_async" if spec.workload.max_staleness else "on_policy"
    argv = ["python", "-m", opts.entrypoint, "rllm/backend=tinker"]
    argv += hydra_overrides(overrides(spec, opts, run_dir), "[rllm]") + opts.overrides
    handoff = Handoff(adapter="rllm", mode=mode, argv=argv, samples_per_step=w.samples_per_step,
                      group_size=w.group_size)  # fmt: skip
    return LaunchPlan(argv=argv, env={"WANDB_DIR": str(run_dir)}, cwd=opts.checkout, files=handoff_files(handoff),
                      timeout_s=spec.timeout_s, description=f"rLLM {mode} (Tinker), {w.steps} steps")  # fmt: skip


def overrides(spec: ExperimentSpec, opts: RllmOptions, run_dir: Path) -> dict[str, object]:
    """The config keys the spec sets; fully async: one task per batch, `mini_batch_size` groups per step, and
    staleness_threshold = max_staleness (generation may run that many mini-batches ahead of the trainer)."""
    w = spec.workload
    out: dict[str, object] = {
        "model.name": w.model, "training.group_size": w.group_size, "validation.group_size": 1,
        "data.max_response_length": w.max_response_tokens, "rllm.trainer.total_batches": w.steps,
        "rllm.trainer.logger": ["wandb"], "rllm.trainer.project_name": "benchbed",
        "rllm.trainer.experiment_name": spec.name, "rllm.trainer.test_freq": opts.test_freq,
        "rllm.trainer.save_freq": -1, "training.default_local_dir": run_dir / "checkpoints",
    }  # fmt: skip
    if w.max_seq_len:
        out["data.max_prompt_length"] = w.max_seq_len - w.max_response_tokens
    if not w.max_staleness:
        return out | {"data.train_batch_size": w.prompts_per_step, "rllm.async_training.enable": False}
    out |= {"data.train_batch_size": 1, "rllm.workflow.raise_on_error": False, "rllm.async_training.enable": True,
            "rllm.async_training.mini_batch_size": w.prompts_per_step,
            "rllm.async_training.staleness_threshold": w.max_staleness,
            "rllm.async_training.trigger_parameter_sync_step": 1,
            "rllm.async_training.partial_rollout": opts.partial_rollout}  # fmt: skip
    if opts.fwd_bwd_group_size:
        out["rllm.async_training.fwd_bwd_group_size"] = opts.fwd_bwd_group_size
    return out
