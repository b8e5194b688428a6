"""ExperimentSpec -> prime-rl `rl` TOML and the `uv run rl @ <config>` launch, run inside the user's checkout."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from benchbed.adapters.prime_rl.options import PrimeRLOptions
from benchbed.adapters.prime_rl.presets import gpus_per_replica, pd_disaggregated, preset_config, presets, served_model

from benchbed.adapterkit.handoff import Handoff, handoff_files
from benchbed.adapterkit.presets import Preset, choose_preset
from benchbed.adapterkit.templates import toml_text
from benchbed.api import ExperimentSpec, LaunchError, LaunchPlan, SpecError

CONFIG_FILE = "prime_rl.toml"
CHECKOUT_ENV = "PRIME_RL_DIR"
# workload.task -> (verifiers taskset id, harness id) used when [prime_rl] does not name them.
TASK_DEFAULTS: dict[str, tuple[str, str | None]] = {
    "math": ("math-env", "null"),
    "swe": ("r2e-gym", "bash"),
    "tool-use": ("wiki-search", None),
    "reverse-text": ("reverse-text", "null"),
}
RUNTIME_FOR_BACKEND = {"prime": "prime", "modal": "modal", "local": "subprocess", "none": "subprocess"}


def run_name(run_dir: Path) -> str:
    """prime-rl's `run.name` for this launch: the run directory's name, made safe for a path component."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", run_dir.name).strip("-") or "run"


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` merged into a copy of `base`, tables recursively (prime-rl's own left-to-right merge)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_preset(spec: ExperimentSpec, opts: PrimeRLOptions) -> Preset | None:
    """The preset [prime_rl].preset names ('none': none), else the one matching workload.model."""
    return choose_preset(presets(), spec.workload.model, opts.preset, "prime_rl")


def render_config(spec: ExperimentSpec) -> dict[str, Any]:
    """The `rl` config as a dict (pure: no checkout needed)."""
    opts: PrimeRLOptions = spec.adapter_options("prime_rl")
    w, res = spec.workload, spec.resources
    if res.colocated:
        raise SpecError(
            f"{spec.name}: prime-rl runs trainer and inference on separate GPUs; set resources.colocated = false"
        )
    if w.max_staleness < 1:
        raise SpecError(
            f"{spec.name}: prime-rl is always at least one step off-policy (TARGET_LAG = 1); "
            "set workload.max_staleness >= 1 (it becomes orchestrator.max_off_policy_steps)"
        )
    preset = resolve_preset(spec, opts)
    generation_model = served_model(preset) if preset is not None else None
    cfg: dict[str, Any] = {
        "max_steps": w.steps,
        "seq_len": w.max_seq_len or w.max_response_tokens,
        "orchestrator": {
            "batch_size": w.samples_per_step,
            "group_size": w.group_size,
            "max_off_policy_steps": w.max_staleness,
            "train": {
                "sampling": {"max_completion_tokens": w.max_response_tokens},
                "source": [_train_source(spec, opts)],
            },
        },
        "trainer": {},  # RLConfig requires the table even when every trainer field is shared or default
        "inference": {},  # present so that `rl` starts the inference server
    }
    if generation_model:
        # prime-rl requires orchestrator.model.name == inference.vllm.model; the trainer keeps the BF16 model,
        # so the shared [model] table is left out (it would conflict with the per-component names).
        cfg = deep_merge(
            cfg,
            {
                "trainer": {"model": {"name": w.model}},
                "orchestrator": {"model": {"name": generation_model}},
                "inference": {"vllm": {"model": generation_model}},
            },
        )
    else:
        cfg["model"] = {"name": w.model}
    if preset is not None:
        cfg = deep_merge(cfg, preset_config(preset))
    cfg = deep_merge(cfg, _deployment(spec, opts, preset))
    if opts.weight_broadcast:
        cfg["weight_broadcast"] = {"type": opts.weight_broadcast}
    return deep_merge(cfg, opts.config)


def _train_source(spec: ExperimentSpec, opts: PrimeRLOptions) -> dict[str, Any]:
    taskset, harness = TASK_DEFAULTS.get(spec.workload.task, (spec.workload.task, None))
    runtime_type = opts.runtime or RUNTIME_FOR_BACKEND[spec.sandbox.backend]
    runtime: dict[str, Any] = {"type": runtime_type}
    if runtime_type in ("prime", "modal") and spec.sandbox.image:
        runtime["image"] = spec.sandbox.image
    if opts.runtime_labels:
        if runtime_type != "prime":
            raise SpecError(f"{spec.name}: prime_rl.runtime_labels apply to Prime sandboxes only, not {runtime_type!r}")
        runtime["labels"] = list(opts.runtime_labels)
    agent: dict[str, Any] = {"runtime": runtime}
    if opts.harness or harness:
        agent["harness"] = {"id": opts.harness or harness}
    return {"name": opts.source_name, "env": {"taskset": {"id": opts.taskset or taskset}, "agent": agent}}


def _deployment(spec: ExperimentSpec, opts: PrimeRLOptions, preset: Preset | None) -> dict[str, Any]:
    res = spec.resources
    gpn = res.gpus_per_node
    multi = opts.multi_node if opts.multi_node is not None else res.trainer_gpus + res.generator_gpus > gpn
    if not multi:
        return {
            "deployment": {
                "type": "single_node",
                "gpus_per_node": gpn,
                "num_train_gpus": res.trainer_gpus,
                "num_infer_gpus": res.generator_gpus,
            }
        }
    for field, gpus in (("trainer_gpus", res.trainer_gpus), ("generator_gpus", res.generator_gpus)):
        if gpus % gpn or gpus == 0:
            raise SpecError(
                f"{spec.name}: resources.{field} = {gpus} must be a positive multiple of "
                f"gpus_per_node = {gpn} for a multi-node prime-rl deployment"
            )
    infer_nodes = res.generator_gpus // gpn
    per_replica_gpus = gpus_per_replica(preset) if preset else gpn
    replicas = opts.num_infer_replicas or max(1, res.generator_gpus // per_replica_gpus)
    if infer_nodes % replicas:
        raise SpecError(f"{spec.name}: {infer_nodes} inference nodes do not split into {replicas} replicas")
    nodes_per_replica = infer_nodes // replicas
    deployment = {
        "type": "multi_node",
        "gpus_per_node": gpn,
        "num_train_nodes": res.trainer_gpus // gpn,
        "num_infer_replicas": replicas,
    }
    out: dict[str, Any] = {"deployment": deployment}
    if preset is not None and pd_disaggregated(preset):
        if nodes_per_replica % 2:
            raise SpecError(
                f"{spec.name}: prefill/decode split needs an even number of nodes per replica, got {nodes_per_replica}"
            )
        half = nodes_per_replica // 2
        out["inference"] = {
            "deployment": {"type": "disaggregated", "prefill_nodes_per_replica": half, "decode_nodes_per_replica": half}
        }
    else:
        deployment["num_infer_nodes"] = nodes_per_replica
    job = re.sub(r"[^A-Za-z0-9_-]+", "-", spec.name).strip("-") or "benchbed"
    out["slurm"] = {"job_name": job, **opts.slurm}
    return out


def find_checkout(opts: PrimeRLOptions, env: dict[str, str] | None = None) -> Path:
    """The prime-rl checkout to run in, or LaunchError saying how to point benchbed at one."""
    env = dict(os.environ) if env is None else env
    raw = opts.checkout or env.get(CHECKOUT_ENV)
    how = f'set prime_rl.checkout = "/path/to/prime-rl" in the spec (or --set it) or export {CHECKOUT_ENV}'
    if not raw:
        raise LaunchError(f"no prime-rl checkout given: {how} (benchbed runs `uv run rl` inside it)")
    path = Path(raw).expanduser()
    pyproject = path / "pyproject.toml"
    if not pyproject.is_file():
        raise LaunchError(f"prime-rl checkout {path} not found or has no pyproject.toml: {how}")
    if not re.search(r'^name\s*=\s*"prime-rl"', pyproject.read_text(errors="replace"), re.M):
        raise LaunchError(f"{path} is not a prime-rl checkout (pyproject.toml does not name project prime-rl): {how}")
    return path


def render_plan(spec: ExperimentSpec, run_dir: Path, env: dict[str, str] | None = None) -> LaunchPlan:
    """The launch: `uv run rl @ <run_dir>/prime_rl.toml --output-dir <run_dir> --run.name <name>` in the checkout."""
    opts: PrimeRLOptions = spec.adapter_options("prime_rl")
    config = render_config(spec)
    checkout = find_checkout(opts, env)
    run_dir = Path(run_dir).absolute()
    name = run_name(run_dir)
    header = (
        f"# Rendered by benchbed for spec {spec.name!r} ({spec.spec_id}); targets prime-rl@{opts.commit}.\n"
        f"# prime-rl writes its run directory to {run_dir / name}.\n"
    )
    argv = [
        "uv",
        "run",
        "rl",
        "@",
        str(run_dir / CONFIG_FILE),
        "--output-dir",
        str(run_dir),
        "--run.name",
        name,
        *opts.extra_args,
    ]
    w = spec.workload
    handoff = Handoff(
        adapter="prime_rl", mode="async (max_off_policy_steps)", argv=argv, samples_per_step=w.samples_per_step,
        group_size=w.group_size, max_off_policy_steps=w.max_staleness, max_steps=w.steps, commit=opts.commit,
    )  # fmt: skip
    return LaunchPlan(
        argv=argv,
        cwd=str(checkout),
        files={CONFIG_FILE: header + toml_text(config), **handoff_files(handoff)},
        timeout_s=spec.timeout_s,
        submits_job="slurm" if "slurm" in config else None,
        description=f"prime-rl@{opts.commit} rl run {name} in {checkout}",
    )
