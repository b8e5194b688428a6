"""TRL's asynchronous GRPO (`trl.experimental.async_grpo.AsyncGRPOTrainer`, TRL 1.16): a rollout worker generates
on a running vLLM server while the trainer trains, samples older than `max_staleness` versions are dropped. GPU
only. Rendered here like the synchronous trainer; `parse.parse_async` reads the per-step figures it logs."""

from __future__ import annotations

import sys

from benchbed.adapters.trl.options import TrlOptions
from benchbed.adapters.trl.script_parts import check_installed, data_line, local_path, local_ref, rewards_line

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

SCRIPT = "trl_async_grpo.py"


def render_async(spec: ExperimentSpec, opts: TrlOptions) -> LaunchPlan:
    """`python trl_async_grpo.py`: the model must be a local checkpoint, the one the vLLM server serves."""
    if opts.model_path is None:
        raise SpecError(f"{spec.source}: trl.trainer 'async_grpo' generates on a vLLM server, which serves a "
                        "checkpoint: set trl.model_path to the directory `trl vllm-serve --model` serves")  # fmt: skip
    w = spec.workload
    model = local_path(opts.model_path, "trl.model_path", spec.source)
    fields = {
        "output_dir": ".", "num_generations": opts.num_generations or w.group_size,
        "per_device_train_batch_size": opts.per_device_train_batch_size or w.prompts_per_step * w.group_size,
        "max_completion_length": opts.max_completion_length or w.max_response_tokens,
        "max_steps": opts.max_steps or w.steps, "max_staleness": w.max_staleness,
        "weight_sync_steps": opts.async_grpo.weight_sync_steps,
        "vllm_server_base_url": opts.async_grpo.vllm_server_base_url, "learning_rate": opts.learning_rate,
        "temperature": opts.temperature, "seed": opts.seed, "logging_steps": 1,
        "report_to": ["wandb"] if opts.wandb else [], "disable_tqdm": True,
    }  # fmt: skip
    callbacks = [local_ref(c, spec.source) for c in opts.callbacks]
    args = ",\n    ".join(f"{k}={v!r}" for k, v in fields.items())
    url = opts.async_grpo.vllm_server_base_url
    doc = (
        f"Asynchronous GRPO with TRL (experimental), rendered by benchbed from {spec.source or 'a spec'} "
        f"({spec.name}). Needs a GPU and `trl vllm-serve --model {model}` at {url}."
    )
    text = f"""{doc!r}

from benchbed.adapters.trl import launch

launch.prepare(threads={opts.threads})

from transformers import AutoTokenizer  # noqa: E402
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer  # noqa: E402

tokenizer = AutoTokenizer.from_pretrained({model!r}, local_files_only=True)
train_dataset = {data_line(opts, spec.source)}
{rewards_line(opts, spec.source)}
args = AsyncGRPOConfig(
    {args},
)
trainer = AsyncGRPOTrainer(model={model!r}, reward_funcs=reward_funcs, args=args, train_dataset=train_dataset,
                           processing_class=tokenizer, callbacks=launch.callbacks({callbacks!r}))
launch.run(trainer, recorder)
"""
    check_installed()
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "offline",
           "WANDB_DIR": ".", "WANDB_PROJECT": "benchbed", "WANDB_SILENT": "true"}  # fmt: skip
    handoff = Handoff(adapter="trl", mode="async", argv=[sys.executable, SCRIPT],
                      samples_per_step=fields["per_device_train_batch_size"], group_size=fields["num_generations"],
                      trainer="async_grpo", rewards=opts.rewards)  # fmt: skip
    return LaunchPlan(argv=[sys.executable, SCRIPT], env=env, files={SCRIPT: text, **handoff_files(handoff)},
                      timeout_s=spec.timeout_s,
                      description=f"TRL async GRPO (vLLM server): {fields['max_steps']} steps, "
                      f"max_staleness {w.max_staleness}")  # fmt: skip
