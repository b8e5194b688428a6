"""ExperimentSpec -> `ray job submit ... -- python3 train.py|train_async.py <args>` as a LaunchPlan."""

from __future__ import annotations

import difflib
import json
import shlex
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from benchbed.adapters.slime.options import SlimeOptions

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.adapterkit.presets import Preset, load_presets, preset_for_model
from benchbed.adapterkit.shared import is_secret_name
from benchbed.adapterkit.upstream import upstream_list
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

FULLY_ASYNC_FN = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
TENSORBOARD_SUBDIR = "tensorboard"
DUMP_SUBDIR = "rollout_dumps"
PREPARE_SUBDIR = "slime_prepare"  # trainer_only: the one-off rollout-only phase writes here
DUMP_TEMPLATE = "rollout_{rollout_id}.pt"
SCRIPT = "slime_trainer_only.sh"
ADAPTER_DIR = Path(__file__).parent
PRESETS_FILE = ADAPTER_DIR / "presets.toml"
FORWARDED_PREFIXES = ("--sglang-",)  # slime hands any --sglang-* option to SGLang's ServerArgs


@cache
def argument_names(version: str) -> frozenset[str]:
    """Option strings the pinned slime commit and Megatron-LM accept (upstream.json, read from their parsers)."""
    slime, megatron = upstream_list(ADAPTER_DIR, f"slime {version}"), upstream_list(ADAPTER_DIR, "megatron")
    return frozenset(slime.names) | frozenset(megatron.names)


def model_table() -> dict[str, Preset]:
    """Megatron architecture args per model (presets.toml, equivalent to upstream scripts/models/*.sh)."""
    return load_presets(PRESETS_FILE)


def model_args(model: str) -> tuple[str, list[str]]:
    """The preset matching the model id and its Megatron argv, or ("", []) where none does."""
    preset = preset_for_model(model_table(), model)
    return ("", []) if preset is None else (preset.name, list(preset.values["args"]))


def unknown_arguments(argv: list[str], version: str) -> list[str]:
    """Option strings in argv that neither the pinned slime commit nor Megatron-LM nor SGLang's prefix accepts."""
    known = argument_names(version)
    options = [t.partition("=")[0] for t in argv if t.startswith("--")]  # `--flag=value` is the option --flag
    return [t for t in options if t not in known and not t.startswith(FORWARDED_PREFIXES)]


def render(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: SlimeOptions = spec.adapter_options("slime")
    run_dir = run_dir.resolve()
    mode = opts.mode or ("sync" if spec.workload.max_staleness == 0 else "one_step_off")
    if opts.benchmark == "trainer_only":
        return _trainer_only(spec, opts, run_dir, mode)
    train = train_args(spec, opts, run_dir, mode)
    env = runtime_env(opts, run_dir / TENSORBOARD_SUBDIR)
    argv = ray_submit(opts, env, train)
    placement = "colocated" if spec.resources.colocated else "disaggregated"
    return LaunchPlan(
        argv=argv,
        cwd=opts.slime_dir,
        timeout_s=spec.timeout_s,
        files=_handoff(spec, opts, mode, train, [argv]),
        description=f"slime {opts.slime_version} {mode} ({placement}) {spec.workload.model}: "
        f"{spec.workload.steps} steps of {spec.workload.samples_per_step} samples",
    )


def train_args(spec: ExperimentSpec, opts: SlimeOptions, run_dir: Path, mode: str) -> list[str]:
    """`python3 train.py|train_async.py ...` for the spec, checked against the pinned argument names."""
    w, r = spec.workload, spec.resources
    if mode != "sync" and r.colocated:
        raise SpecError(
            f"{spec.name}: slime's train_async.py refuses --colocate; set resources.colocated = false "
            f"or [slime].mode = 'sync' (mode is {mode!r})"
        )
    # An absolute script path works whatever directory Ray starts the job driver in (sys.path[0] = the checkout).
    script = "train.py" if mode == "sync" else "train_async.py"
    args = ["python3", str(PurePosixPath(opts.slime_dir) / script)]
    args += _placement(spec)
    name, arch = model_args(w.model)
    if not arch and "--num-layers" not in opts.args:
        known = ", ".join(model_table())
        raise SpecError(
            f"{spec.name}: no Megatron architecture arguments for model {w.model!r} (known: {known}); "
            "add them to [slime].args"
        )
    args += arch
    args += option("--hf-checkpoint", opts.hf_checkpoint or w.model)
    for flag, value in (
        ("--ref-load", opts.ref_load),
        ("--load", opts.load),
        ("--save", opts.save),
        ("--prompt-data", opts.prompt_data),
    ):
        if value:
            args += option(flag, value)
    args += [
        "--num-rollout",
        str(w.steps),
        "--rollout-batch-size",
        str(w.prompts_per_step),
        "--n-samples-per-prompt",
        str(w.group_size),
        "--global-batch-size",
        str(w.samples_per_step),
        "--rollout-max-response-len",
        str(w.max_response_tokens),
    ]
    if w.max_seq_len:
        args += ["--rollout-max-context-len", str(w.max_seq_len)]
    if opts.over_sampling_batch_size:
        if opts.over_sampling_batch_size < w.prompts_per_step:
            raise SpecError(
                f"{spec.name}: [slime].over_sampling_batch_size ({opts.over_sampling_batch_size}) must be "
                f">= workload.prompts_per_step ({w.prompts_per_step}), as slime requires"
            )
        args += ["--over-sampling-batch-size", str(opts.over_sampling_batch_size)]
    if opts.partial_rollout:
        args += ["--partial-rollout"]
    if mode != "sync":  # one-step-off staleness is at most the push interval
        interval = opts.update_weights_interval or max(1, w.max_staleness)
        args += ["--update-weights-interval", str(interval)]
    if mode == "fully_async":
        args += ["--rollout-function-path", FULLY_ASYNC_FN]
    elif opts.rollout_function_path:
        args += option("--rollout-function-path", opts.rollout_function_path)
    if opts.custom_generate_function_path:
        args += option("--custom-generate-function-path", opts.custom_generate_function_path)
    if opts.rollout_num_gpus_per_engine:
        args += ["--rollout-num-gpus-per-engine", str(opts.rollout_num_gpus_per_engine)]
    args += ["--use-tensorboard", "--save-debug-rollout-data", str(run_dir / DUMP_SUBDIR / DUMP_TEMPLATE)]
    args += opts.args
    check_arguments(spec.name, args, opts.slime_version)
    return args


def option(flag: str, value: str) -> list[str]:
    """`flag value`, or `flag=value` when the value starts with '-' (argparse would take it for an option)."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def _placement(spec: ExperimentSpec) -> list[str]:
    r = spec.resources
    if r.trainer_gpus <= 0:
        raise SpecError(f"{spec.name}: resources.trainer_gpus must be > 0 for slime")
    per_node = min(r.trainer_gpus, r.gpus_per_node)
    if r.trainer_gpus % per_node:
        raise SpecError(
            f"{spec.name}: resources.trainer_gpus ({r.trainer_gpus}) is not a multiple of "
            f"resources.gpus_per_node ({r.gpus_per_node}); slime places whole nodes"
        )
    args = ["--actor-num-nodes", str(r.trainer_gpus // per_node), "--actor-num-gpus-per-node", str(per_node)]
    if r.colocated:
        return args + ["--colocate"]
    if r.generator_gpus <= 0:
        raise SpecError(f"{spec.name}: disaggregated slime needs resources.generator_gpus > 0")
    return args + ["--rollout-num-gpus", str(r.generator_gpus)]


def check_arguments(name: str, argv: list[str], version: str) -> None:
    unknown = unknown_arguments(argv, version)
    if unknown:
        pool = sorted(argument_names(version))
        hints = [
            f"{u} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(u, pool, n=1)) else u for u in unknown
        ]
        raise SpecError(f"{name}: argument(s) unknown to slime {version} / Megatron-LM: {', '.join(hints)}")


def runtime_env(opts: SlimeOptions, tensorboard_dir: Path) -> dict[str, dict[str, str]]:
    secret = sorted(k for k in opts.env if is_secret_name(k))
    if secret:
        raise SpecError(
            f"[slime.env] sets {', '.join(secret)}: secrets must come from the environment the run inherits "
            "(the Ray cluster's own environment), never from a spec, which is stored with every record"
        )
    env = {
        "PYTHONPATH": opts.megatron_path,
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "TENSORBOARD_DIR": str(tensorboard_dir),
    }
    env.update(opts.env)
    return {"env_vars": env}


def ray_submit(opts: SlimeOptions, env: dict[str, Any], train: list[str]) -> list[str]:
    return [
        "ray",
        "job",
        "submit",
        "--address",
        opts.ray_address,
        "--runtime-env-json",
        json.dumps(env, separators=(",", ":")),
        "--",
        *train,
    ]


def _trainer_only(spec: ExperimentSpec, opts: SlimeOptions, run_dir: Path, mode: str) -> LaunchPlan:
    """Phase 1 generates and dumps rollouts once (rollout GPUs only); phase 2 replays them through the trainer."""
    prepare = run_dir / PREPARE_SUBDIR
    dumps = prepare / DUMP_SUBDIR / DUMP_TEMPLATE
    base = [a for a in train_args(spec, opts, run_dir, "sync") if a != "--colocate"]
    base = _drop_option(base, "--save-debug-rollout-data")
    k = min(opts.trainer_only_rollouts, spec.workload.steps)
    phase1 = _set_option(base, "--num-rollout", str(k)) + [
        "--debug-rollout-only",
        "--save-debug-rollout-data",
        str(dumps),
    ]
    if "--rollout-num-gpus" not in phase1:  # a colocated spec: the rollout-only phase gets the trainer's GPUs
        phase1 += ["--rollout-num-gpus", str(spec.resources.trainer_gpus)]
    replay = str(dumps) if spec.workload.steps <= k else str(prepare / DUMP_SUBDIR / "rollout_0.pt")
    phase2 = _drop_option(base, "--rollout-num-gpus") + ["--load-debug-rollout-data", replay]
    for argv in (phase1, phase2):
        check_arguments(spec.name, argv, opts.slime_version)
    cmd1 = ray_submit(opts, runtime_env(opts, prepare / TENSORBOARD_SUBDIR), phase1)
    cmd2 = ray_submit(opts, runtime_env(opts, run_dir / TENSORBOARD_SUBDIR), phase2)
    script = "\n".join(
        [
            "#!/usr/bin/env bash",
            "# benchbed slime trainer-only benchmark: rollouts once, then trainer replays",
            "set -euo pipefail",
            f"mkdir -p {shlex.quote(str(prepare))}",
            f"{shlex.join(cmd1)} > {shlex.quote(str(prepare / 'rollout_only.log'))} 2>&1",
            shlex.join(cmd2),
            "",
        ]
    )
    return LaunchPlan(
        argv=["bash", str(run_dir / SCRIPT)],
        cwd=opts.slime_dir,
        timeout_s=spec.timeout_s,
        files={SCRIPT: script, **_handoff(spec, opts, mode, phase2, [cmd1, cmd2])},
        description=f"slime {opts.slime_version} trainer-only: {k} rollout(s) dumped once, {spec.workload.steps} "
        f"replayed training steps of {spec.workload.model}",
    )


def _handoff(
    spec: ExperimentSpec, opts: SlimeOptions, mode: str, train: list[str], commands: list[list[str]]
) -> dict[str, str]:
    """The hand-off file: the training arguments parse reads the batch shape and loop from, and every command."""
    w = spec.workload
    handoff = Handoff(
        adapter="slime", mode=mode, argv=train, samples_per_step=w.samples_per_step, group_size=w.group_size,
        commands=commands, slime_version=opts.slime_version, benchmark=opts.benchmark,
    )  # fmt: skip
    return handoff_files(handoff)


def _drop_option(argv: list[str], flag: str) -> list[str]:
    if flag not in argv:
        return argv
    i = argv.index(flag)
    return argv[:i] + argv[i + 2 :]


def _set_option(argv: list[str], flag: str, value: str) -> list[str]:
    i = argv.index(flag)
    return argv[: i + 1] + [value] + argv[i + 2 :]
