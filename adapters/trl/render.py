"""Render a spec into a TRL GRPO script, as a user would write it, run with `python trl_grpo.py` in the run directory.
Pure: TRL is not imported (its installed release is read from package metadata)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchbed.adapters.trl import vllm_parts
from benchbed.adapters.trl.asyncgrpo import render_async
from benchbed.adapters.trl.options import TrlOptions
from benchbed.adapters.trl.script_parts import check_installed, data_line, local_path, local_ref, rewards_line

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

SCRIPT = "trl_grpo.py"


def grpo_fields(spec: ExperimentSpec, opts: TrlOptions) -> dict[str, Any]:
    """The GRPOConfig keyword arguments: the [trl] fields, the rest from [workload]; checked for TRL's own rules
    here, so a bad combination fails before anything starts."""
    w = spec.workload
    g = opts.num_generations or w.group_size
    bs = opts.per_device_train_batch_size or w.prompts_per_step * w.group_size
    spg = opts.steps_per_generation or opts.gradient_accumulation_steps
    if g < 2:
        raise SpecError(f"{spec.source}: GRPO needs a group of at least 2 (trl.num_generations or workload.group_size)")
    if (bs * spg) % g:
        raise SpecError(f"{spec.source}: the generation batch, per_device_train_batch_size × steps_per_generation = "
                        f"{bs} × {spg}, must be a multiple of num_generations ({g})")  # fmt: skip
    use_cpu = cpu_run(opts)
    vllm_parts.check(opts, use_cpu, spec.source)
    fields: dict[str, Any] = {
        "output_dir": ".", "num_generations": g, "per_device_train_batch_size": bs, "steps_per_generation": spg,
        "num_iterations": opts.num_iterations, "gradient_accumulation_steps": opts.gradient_accumulation_steps,
        "max_completion_length": opts.max_completion_length or w.max_response_tokens,
        "max_steps": opts.max_steps or w.steps, "beta": opts.beta, "loss_type": opts.loss_type,
        "learning_rate": opts.learning_rate, "temperature": opts.temperature, "seed": opts.seed, "use_cpu": use_cpu,
        "logging_steps": 1, "save_strategy": "no", "report_to": ["wandb"] if opts.wandb else [],
        "disable_tqdm": True, "bf16": False,
    }  # fmt: skip
    if opts.reward_weights is not None:
        fields["reward_weights"] = opts.reward_weights
    return {**fields, **vllm_parts.grpo_fields(opts)}


def cpu_run(opts: TrlOptions) -> bool:
    """Whether the run trains on the CPU: trl.use_cpu, or no CUDA device visible."""
    return opts.use_cpu if opts.use_cpu is not None else not _cuda_visible()


def _cuda_visible() -> bool:
    """Whether a CUDA device is visible, without importing torch (render stays light)."""
    return Path("/dev/nvidia0").exists() and sys.platform == "linux"


def _model_lines(opts: TrlOptions, source: str) -> str:
    if opts.model_path is None:
        m = opts.model
        return (f"model, tokenizer = launch.tiny_model(arch={m.arch!r}, layers={m.layers}, hidden={m.hidden}, "
                f"heads={m.heads}, kv_heads={m.kv_heads},\n    intermediate={m.intermediate}, experts={m.experts}, "
                f"top_k={m.top_k}, expert_hidden={m.expert_hidden}, seed={opts.seed})")  # fmt: skip
    return f"model, tokenizer = launch.local_model({local_path(opts.model_path, 'trl.model_path', source)!r})"


def _checkpoint(opts: TrlOptions, source: str) -> str | None:
    return None if opts.model_path is None else local_path(opts.model_path, "trl.model_path", source)


def script(spec: ExperimentSpec, opts: TrlOptions) -> str:
    """The Python script of the run: readable, and runnable by hand in the run directory."""
    fields = grpo_fields(spec, opts)
    cpu = fields["use_cpu"]
    data = data_line(opts, spec.source)
    callbacks = [local_ref(c, spec.source) for c in opts.callbacks]
    args = ",\n    ".join(f"{k}={v!r}" for k, v in fields.items())
    doc = f"GRPO with TRL, rendered by benchbed from {spec.source or 'a spec'} ({spec.name})."
    return f"""{doc!r}

from benchbed.adapters.trl import launch

launch.prepare(threads={opts.threads})

from trl import GRPOConfig, GRPOTrainer  # noqa: E402
{vllm_parts.install_lines(opts, cpu)}
{_model_lines(opts, spec.source)}
{vllm_parts.model_lines(opts, cpu, _checkpoint(opts, spec.source))}train_dataset = {data}
{rewards_line(opts, spec.source)}
args = GRPOConfig(
    {args},
)
trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward_funcs, args=args,
                      train_dataset=train_dataset, callbacks=launch.callbacks({callbacks!r}))
launch.run(trainer, recorder)
"""


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    """`python trl_grpo.py` in the run directory, W&B offline, nothing downloaded."""
    opts: TrlOptions = spec.adapter_options("trl")  # validated once, when the spec was loaded
    if opts.trainer == "async_grpo":
        return render_async(spec, opts)
    text = script(spec, opts)
    python = vllm_parts.python(opts)
    if python is None:
        check_installed()  # in another environment, the script checks its own TRL (launch.prepare)
    argv = [python or sys.executable, SCRIPT]
    fields = grpo_fields(spec, opts)
    threads = str(opts.threads)
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "offline",
           "WANDB_DIR": ".", "WANDB_PROJECT": "benchbed", "WANDB_SILENT": "true", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
           **vllm_parts.environment(opts, fields["use_cpu"])}  # fmt: skip
    handoff = Handoff(adapter="trl", mode="sync", argv=argv,
                      samples_per_step=fields["per_device_train_batch_size"], group_size=fields["num_generations"],
                      concurrency=fields["per_device_train_batch_size"] * fields["steps_per_generation"],
                      trainer=opts.trainer, rewards=opts.rewards)  # fmt: skip
    generator = "" if opts.vllm.mode == "none" else f", vLLM {opts.vllm.mode}"
    return LaunchPlan(
        argv=argv,
        env=env,
        files={SCRIPT: text, **handoff_files(handoff)},
        timeout_s=spec.timeout_s,
        description=f"TRL GRPO: {fields['max_steps']} steps, {opts.model_path or opts.model.arch}"
        f", steps_per_generation {fields['steps_per_generation']}, num_iterations {fields['num_iterations']}"
        f"{generator}",
    )
