"""TRL's asynchronous GRPO (`trl.experimental.async_grpo.AsyncGRPOTrainer`, TRL 1.16): a rollout worker generates
on a running vLLM server while the trainer trains, samples older than `max_staleness` versions are dropped. GPU
only. Rendered like the synchronous trainer; parsed from the per-step figures it logs (`perf/*`, `sample/*`,
`batch/*` in trainer_state.json's log_history), which carry no per-sample rows: staleness is TRL's own figure."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

from benchbed.adapters.trl.options import TrlOptions

from benchbed import keys as K
from benchbed.adapter import LaunchPlan
from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.errors import SpecError
from benchbed.spec import ExperimentSpec
from benchbed.trace import Trace, TraceBuilder, TraceMeta

if TYPE_CHECKING:
    from benchbed.adapters.trl.parse import Run

SCRIPT = "trl_async_grpo.py"


def render_async(spec: ExperimentSpec, opts: TrlOptions) -> LaunchPlan:
    """`python trl_async_grpo.py`: the model must be a local checkpoint, the one the vLLM server serves."""
    from benchbed.adapters.trl.render import _local, _local_ref, check_installed, data_line, rewards_line

    if opts.model_path is None:
        raise SpecError(f"{spec.source}: trl.trainer 'async_grpo' generates on a vLLM server, which serves a "
                        "checkpoint: set trl.model_path to the directory `trl vllm-serve --model` serves")  # fmt: skip
    w = spec.workload
    model = _local(opts.model_path, "trl.model_path", spec.source)
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
    callbacks = [_local_ref(c, spec.source) for c in opts.callbacks]
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


def parse_async(run: Run) -> Trace:
    """Per-step agg rows from the async trainer's log_history, mapped by keymap.toml (mode "async")."""
    from benchbed.adapters.trl.parse import KEYMAP

    release, _ = KEYMAP.nearest(run.versions.get("trl", ""))
    by_role = {role: KEYMAP.mapping(release, role, "async") for role in ("step", "component", "counter", "framework",
                                                                          "native")}  # fmt: skip
    builder = TraceBuilder()
    for e in run.log:
        step = int(e["step"])
        summed: dict[str, float] = {}
        for key, value in e.items():
            if key in ("step", "epoch") or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            for role in ("step", "component", "counter"):
                if key in by_role[role]:
                    canonical = by_role[role][key]
                    summed[canonical] = summed.get(canonical, 0.0) + float(value)
                    break
            else:
                name = by_role["framework"].get(key) or by_role["native"].get(key) or f"native.trl.{key}"
                builder.agg(name, step, float(value), actor="trainer")
        if K.TRAINER_STEP not in summed:
            summed.pop(K.TRAINER_WAIT, None)  # step 1 has no measured step time (TRL: nothing before it to measure)
            summed = {k: v for k, v in summed.items() if not k.startswith("trainer.")}
        for key, value in summed.items():
            builder.agg(key, step, value, actor="trainer")
    if not run.finished:
        last = run.log[-1]["step"] if run.log else 0
        run.warnings.append(f"TRL did not finish training: the log stops at step {last}")
    meta = TraceMeta(adapter="trl", framework="trl", framework_version=run.versions.get("trl", ""), mode="async",
                     samples_per_step=int(run.args.get("per_device_train_batch_size", 0)) or None,
                     group_size=int(run.args["num_generations"]), sources=run.sources, warnings=run.warnings,
                     partial=not run.finished,
                     extra={"max_staleness": run.args.get("max_staleness"), "versions": run.versions})  # fmt: skip
    return builder.build(meta).validate()
