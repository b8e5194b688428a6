"""Render the sbatch script for `--launcher slurm` from [resources], [slurm] and the plan (pure; golden-tested)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from benchbed.adapters.base import LaunchPlan
from benchbed.errors import LaunchError
from benchbed.launch.rayjob import UNREACHABLE_EXIT
from benchbed.secrets import is_secret_name
from benchbed.spec import ExperimentSpec, SlurmSpec

SCRIPT_NAME = "benchbed.sbatch"
STDOUT_LOG = "logs/stdout.log"
STDERR_LOG = "logs/stderr.log"
TIME_MARGIN_MIN = 1  # Slurm's own limit sits past benchbed's timeout, so benchbed cancels first and says why


def allocation(spec: ExperimentSpec, options: SlurmSpec) -> tuple[int, int]:
    """(nodes, GPUs per node): the [slurm] values, else whole nodes for the [resources] GPUs."""
    res = spec.resources
    gpus_per_node = options.gpus_per_node if options.gpus_per_node is not None else res.gpus_per_node
    if options.nodes is not None:
        return options.nodes, gpus_per_node
    total = res.trainer_gpus if res.colocated else res.trainer_gpus + res.generator_gpus
    nodes = max(1, math.ceil(total / res.gpus_per_node))
    return nodes, gpus_per_node


def time_limit(spec: ExperimentSpec, options: SlurmSpec) -> str | None:
    """sbatch --time: [slurm].time_limit, else the spec's timeout rounded up to minutes plus a margin."""
    if options.time_limit:
        return options.time_limit
    if spec.timeout_s:
        return str(math.ceil(spec.timeout_s / 60) + TIME_MARGIN_MIN)
    return None


def public_env(env: dict[str, str]) -> dict[str, str]:
    """Variables that may be written into the script; secret-named ones travel in sbatch's environment only."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}


def render_script(spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> str:
    """The batch script: #SBATCH header, run-dir check, environment, captures, then the plan's command."""
    options = spec.slurm or SlurmSpec()
    secret = sorted(k for k in options.env if is_secret_name(k))
    if secret:
        raise LaunchError(
            f"[slurm].env sets {secret}: secrets must come from the cluster's own environment, never from a "
            "spec (specs are stored with every record)"
        )
    run_dir = Path(run_dir)
    nodes, gpus_per_node = allocation(spec, options)
    header = {
        "--job-name": options.job_name or spec.name,
        "--nodes": str(nodes),
        "--gpus-per-node": str(gpus_per_node) if gpus_per_node else None,
        "--time": time_limit(spec, options),
        "--partition": options.partition,
        "--account": options.account,
        "--qos": options.qos,
        "--output": str(run_dir / STDOUT_LOG),
        "--error": str(run_dir / STDERR_LOG),
    }
    lines = ["#!/bin/bash", f"# Rendered by benchbed for spec {spec.name!r} ({spec.spec_id})."]
    lines += [f"#SBATCH {flag}={value}" for flag, value in header.items() if value is not None]
    lines += [f"#SBATCH {option}" for option in options.sbatch_options]
    run = shlex.quote(str(run_dir))
    missing = shlex.quote(
        f"benchbed: run directory {run_dir} is not visible where the job runs; "
        "put --store on a filesystem both sides see"
    )
    lines += ["", f"test -d {run} || {{ echo {missing} >&2; exit {UNREACHABLE_EXIT}; }}"]
    env = {**public_env(plan.env), **options.env}
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    cwd = plan.cwd or str(run_dir)
    lines.append(f"cd {shlex.quote(cwd)} || exit 1")
    steps = [
        f"{shlex.join(capture)} > {shlex.quote(str(run_dir / rel))} || "
        f"echo {shlex.quote(f'benchbed: could not record {rel} with {capture[0]}')} >&2"
        for rel, capture in plan.captures.items()
    ]
    steps.append(f"exec {shlex.join(plan.argv)}")
    lines += _in_container(steps, options, run_dir, cwd)
    return "\n".join(lines) + "\n"


def _in_container(steps: list[str], options: SlurmSpec, run_dir: Path, cwd: str) -> list[str]:
    """The steps as script lines, or as one `srun --container-image …` (pyxis) running them inside the image."""
    if not options.container_image:
        return steps
    mounts = [f"{run_dir}:{run_dir}"]
    if cwd != str(run_dir):
        mounts.append(f"{cwd}:{cwd}")
    mounts += options.container_mounts
    srun = [
        "srun", "--ntasks=1", f"--container-image={options.container_image}",
        f"--container-mounts={','.join(mounts)}", f"--container-workdir={cwd}",
    ]  # fmt: skip
    return [f"exec {shlex.join([*srun, 'bash', '-c', '; '.join(steps)])}"]
