"""Render a spec into SkyRL's own command, `uv run --isolated --extra fsdp -m ENTRYPOINT key=value ...` (its config
dataclasses' dotted names, as examples/train/fully_async/fully_async_run_gsm8k.sh runs it), in the checkout; pure."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.skyrl import SkyRLOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.adapterkit.hydra import hydra_overrides
from benchbed.api import AdapterError, ExperimentSpec, LaunchPlan

FULLY_ASYNC, SYNC = "examples.train.fully_async.main_fully_async", "skyrl.train.entrypoints.main_base"


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: SkyRLOptions = spec.adapter_options("skyrl")
    w, mode = spec.workload, "fully_async" if spec.workload.max_staleness else "sync"
    argv = ["uv", "run", "--isolated", "--extra", opts.backend, "-m", FULLY_ASYNC if w.max_staleness else SYNC]
    argv += hydra_overrides(overrides(spec, opts, run_dir), "[skyrl]")
    argv += opts.overrides
    handoff = Handoff(
        adapter="skyrl", mode=mode, argv=argv, samples_per_step=w.samples_per_step, group_size=w.group_size
    )
    return LaunchPlan(argv=argv, env={"WANDB_DIR": str(run_dir)}, cwd=opts.checkout, files=handoff_files(handoff),
                      timeout_s=spec.timeout_s, description=f"SkyRL {mode}, {w.steps} steps")  # fmt: skip


def overrides(spec: ExperimentSpec, opts: SkyRLOptions, run_dir: Path) -> dict[str, object]:
    """The config fields the spec sets, in SkyRL's dotted names (skyrl/train/config/config.py)."""
    w, r = spec.workload, spec.resources
    trainer_gpus = r.trainer_gpus
    engines = (trainer_gpus if r.colocated else r.generator_gpus) // opts.tensor_parallel_size
    if engines < 1 or trainer_gpus > r.gpus_per_node and trainer_gpus % r.gpus_per_node:
        raise AdapterError(
            f"skyrl: {trainer_gpus} trainer GPUs ({r.gpus_per_node} a node) and {r.generator_gpus} generator GPUs "
            f"at tensor parallel {opts.tensor_parallel_size} make no placement"
        )
    out: dict[str, object] = {
        "trainer.policy.model.path": w.model, "trainer.train_batch_size": w.prompts_per_step,
        "trainer.policy_mini_batch_size": w.prompts_per_step, "generator.n_samples_per_prompt": w.group_size,
        "generator.sampling_params.max_generate_length": w.max_response_tokens, "trainer.max_training_steps": w.steps,
        "trainer.strategy": opts.backend, "trainer.placement.colocate_all": r.colocated,
        "generator.inference_engine.num_engines": engines,
        "generator.inference_engine.tensor_parallel_size": opts.tensor_parallel_size,
        "trainer.logger": "wandb", "trainer.project_name": "benchbed", "trainer.run_name": spec.name,
        "trainer.ckpt_path": run_dir / "ckpts", "trainer.export_path": run_dir / "exports",
    }  # fmt: skip
    if w.max_seq_len:
        out["trainer.max_prompt_length"] = w.max_seq_len - w.max_response_tokens
    for role in ("policy", "ref"):
        out[f"trainer.placement.{role}_num_nodes"] = -(-trainer_gpus // r.gpus_per_node)
        out[f"trainer.placement.{role}_num_gpus_per_node"] = min(trainer_gpus, r.gpus_per_node)
    if opts.train_data:
        out["data.train_data"] = list(opts.train_data)
    if w.max_staleness:  # the fully async trainer: bounded staleness, one request per sample (generator.batched off)
        workers = opts.generation_workers or w.prompts_per_step * (w.max_staleness + 1)
        out |= {"trainer.fully_async.enabled": True, "trainer.fully_async.max_staleness_steps": w.max_staleness,
                "trainer.fully_async.num_parallel_generation_workers": workers, "generator.batched": False,
                "trainer.fully_async.sample_full_batch": opts.sample_full_batch}  # fmt: skip
    return out
