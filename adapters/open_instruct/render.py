"""Render a spec into open-instruct's own command, `uv run python open_instruct/grpo_fast.py --flag value ...` (its
config dataclasses' field names as HfArgumentParser flags, as scripts/train/debug/grpo_fast.sh runs it), in the
checkout; pure. Names at allenai/open-instruct e6c3044aa6201c8bfa4573c1b03142af599e730d."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.open_instruct import OpenInstructOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import AdapterError, ExperimentSpec, LaunchPlan

PROMPT_DEFAULT = 256  # StreamingDataLoaderConfig.max_prompt_token_length's default (open_instruct/data_loader.py)


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: OpenInstructOptions = spec.adapter_options("open_instruct")
    w = spec.workload
    argv = ["uv", "run", "python", "open_instruct/grpo_fast.py"]
    for flag, value in flags(spec, opts, run_dir).items():
        argv += [f"--{flag}", *(value if isinstance(value, list) else [text(value)])]
    argv += opts.overrides
    handoff = Handoff(adapter="open_instruct", mode="async", argv=argv, samples_per_step=w.samples_per_step,
                      group_size=w.group_size)  # fmt: skip
    return LaunchPlan(argv=argv, env={"WANDB_DIR": str(run_dir)}, cwd=opts.checkout, files=handoff_files(handoff),
                      timeout_s=spec.timeout_s, description=f"open-instruct GRPO (async_steps {w.max_staleness}), "
                      f"{w.steps} steps")  # fmt: skip


def text(value: object) -> str:
    """A flag's value as HfArgumentParser reads it back (bools as true/false, its string_to_bool words)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def flags(spec: ExperimentSpec, opts: OpenInstructOptions, run_dir: Path) -> dict[str, object]:
    """The fields the spec sets (GRPOExperimentConfig in open_instruct/grpo_utils.py, StreamingDataLoaderConfig and
    VLLMConfig in open_instruct/data_loader.py, ModelConfig), by their flag names."""
    w, r = spec.workload, spec.resources
    engines = r.generator_gpus // opts.vllm_tensor_parallel_size
    if r.colocated or engines < 1 or r.trainer_gpus < 1:
        raise AdapterError(
            f"open_instruct: grpo_fast puts its learners and vLLM engines on separate GPUs; {r.trainer_gpus} trainer "
            f"and {r.generator_gpus} generator GPUs{' (colocated)' if r.colocated else ''} at tensor parallel "
            f"{opts.vllm_tensor_parallel_size} make no placement"
        )
    if w.max_staleness < 1:
        raise AdapterError("open_instruct: grpo_fast is asynchronous only (async_steps must be >= 1, "
                           "data_loader.py refuses 0): set workload.max_staleness >= 1")  # fmt: skip
    prompt = w.max_seq_len - w.max_response_tokens if w.max_seq_len else PROMPT_DEFAULT
    full, rest = divmod(r.trainer_gpus, r.gpus_per_node)
    out: dict[str, object] = {
        "exp_name": spec.name, "model_name_or_path": w.model, "num_unique_prompts_rollout": w.prompts_per_step,
        "num_samples_per_prompt_rollout": w.group_size, "response_length": w.max_response_tokens,
        "max_prompt_token_length": prompt, "pack_length": prompt + w.max_response_tokens,
        "total_episodes": w.steps * w.samples_per_step, "async_steps": w.max_staleness,
        "num_learners_per_node": [str(n) for n in [r.gpus_per_node] * full + [rest] * bool(rest)],
        "vllm_num_engines": engines, "vllm_tensor_parallel_size": opts.vllm_tensor_parallel_size,
        "local_eval_every": opts.local_eval_every, "save_freq": opts.save_freq, "with_tracking": True,
        "wandb_project": "benchbed", "output_dir": run_dir / "output", "push_to_hub": False,
    }  # fmt: skip
    if opts.dataset_mixer_list:
        out["dataset_mixer_list"] = list(opts.dataset_mixer_list)
    return out
