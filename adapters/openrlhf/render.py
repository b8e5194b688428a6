"""Render a spec into OpenRLHF's launch as its README gives it: `ray job submit -- python3 -m
openrlhf.cli.train_ppo_ray` with the dotted flags of OpenRLHF@3c3be62, kept as data in flags.toml; pure. The flags
cannot be checked against OpenRLHF's parser here: it is built inside train_ppo_ray's `__main__`, after imports of
ray, torch and vLLM."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.openrlhf.options import OpenRLHFOptions

from benchbed.adapterkit.templates import argv, render_template, sections, spec_values
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

FLAGS = Path(__file__).with_name("flags.toml")


def flags(spec: ExperimentSpec, run_dir: Path) -> list[str]:
    """train_ppo_ray's arguments: the sections of flags.toml that apply, filled from [workload], [resources] and the
    [openrlhf] table, after the checks that OpenRLHF can run the spec."""
    opts: OpenRLHFOptions = spec.adapter_options("openrlhf")
    w, r = spec.workload, spec.resources
    tp, per_node = opts.vllm_tensor_parallel_size, min(r.trainer_gpus, r.gpus_per_node)
    if opts.prompt_data is None or opts.remote_rm_url is None:
        raise SpecError(f"{spec.source}: name the prompts and the reward: openrlhf.prompt_data, openrlhf.remote_rm_url")
    if r.generator_gpus % tp or r.trainer_gpus % per_node:
        raise SpecError(
            f"{spec.source}: generator_gpus must be a multiple of openrlhf.vllm_tensor_parallel_size ({tp}) and "
            "trainer_gpus whole nodes"
        )
    if opts.partial_rollout and not w.max_staleness:
        raise SpecError(f"{spec.source}: openrlhf.partial_rollout needs asynchronous training (max_staleness > 0)")
    if r.colocated and w.max_staleness:
        raise SpecError(f"{spec.source}: OpenRLHF's async training does not colocate vLLM (--vllm.enable_sleep)")
    values = spec_values(spec, run_dir, model=opts.model_path or w.model, max_samples=w.prompts_per_step * w.steps)
    values |= {"nodes": r.trainer_gpus // per_node, "per_node": per_node, "engines": r.generator_gpus // tp}
    conditions = {"kl": opts.kl_coef > 0, "colocated": r.colocated, "asynchronous": w.max_staleness > 0}
    conditions["partial_rollout"] = opts.partial_rollout
    return argv(sections(render_template(FLAGS, values), **conditions))


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    """The job as OpenRLHF's README submits it (`--launcher ray --ray-working-dir` uploads a checkout)."""
    opts: OpenRLHFOptions = spec.adapter_options("openrlhf")
    job = ["python3", "-m", "openrlhf.cli.train_ppo_ray", *flags(spec, Path(run_dir))]
    mode = "async" if spec.workload.max_staleness else "sync"
    description = f"OpenRLHF {mode} GRPO, {spec.workload.steps} steps"
    submit = ["ray", "job", "submit", "--address", opts.ray_address, "--"]
    return LaunchPlan(argv=submit + job, timeout_s=spec.timeout_s, description=description)
