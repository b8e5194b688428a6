"""Render the sbatch script for `--launcher slurm` from [resources], [slurm] and the plan (pure; golden-tested)."""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

from benchbed.adapter import LaunchPlan
from benchbed.errors import SpecError
from benchbed.launch.ray_submission import is_ray_submit, run_dir_check
from benchbed.launch.slurm_options import SlurmOptions
from benchbed.secrets import is_secret_name
from benchbed.shell import is_variable_name
from benchbed.spec.model import ExperimentSpec

SCRIPT_NAME = "benchbed.sbatch"
STDOUT_LOG = "logs/stdout.log"
STDERR_LOG = "logs/stderr.log"
RAY_PORT = 6379
RAY_DASHBOARD_PORT = 8265
RAY_READY_TRIES = 90  # two seconds apart
TIME_MARGIN_MIN = 1  # Slurm's own limit sits past benchbed's timeout, so benchbed cancels first and says why


def allocation(spec: ExperimentSpec, options: SlurmOptions) -> tuple[int, int]:
    """(nodes, GPUs per node): the [slurm] values, else whole nodes for the [resources] GPUs."""
    res = spec.resources
    gpus_per_node = options.gpus_per_node if options.gpus_per_node is not None else res.gpus_per_node
    if options.nodes is not None:
        return options.nodes, gpus_per_node
    total = res.trainer_gpus if res.colocated else res.trainer_gpus + res.generator_gpus
    nodes = max(1, math.ceil(total / res.gpus_per_node))
    return nodes, gpus_per_node


def time_limit(spec: ExperimentSpec, options: SlurmOptions) -> str | None:
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
    options: SlurmOptions = spec.launcher_options("slurm")
    run_dir = Path(run_dir)
    nodes, gpus_per_node = allocation(spec, options)
    header = {
        "--job-name": re.sub(r"\s+", "-", options.job_name or spec.name),
        "--nodes": str(nodes),
        "--gpus-per-node": str(gpus_per_node) if gpus_per_node else None,
        "--time": time_limit(spec, options),
        "--partition": options.partition,
        "--account": options.account,
        "--qos": options.qos,
        "--output": str(run_dir / STDOUT_LOG),
        "--error": str(run_dir / STDERR_LOG),
    }
    env = {**public_env(plan.env), **options.env}
    _check_script_values(spec, header, options.sbatch_options, env)
    lines = ["#!/bin/bash", f"# Rendered by benchbed for spec {spec.name!r} ({spec.spec_id})."]
    lines += [f"#SBATCH {flag}={value}" for flag, value in header.items() if value is not None]
    lines += [f"#SBATCH {option}" for option in options.sbatch_options]
    lines += ["", run_dir_check(run_dir)]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    cwd = plan.cwd or str(run_dir)
    lines.append(f"cd {shlex.quote(cwd)} || exit 1")
    container = _container_options(options, run_dir, cwd)
    steps: list[str] = []
    if wants_ray_cluster(options, plan, nodes):
        lines += ray_worker_lines(nodes, gpus_per_node, container)
        steps += ray_head_steps(nodes, gpus_per_node)
    steps += [
        f"{shlex.join(capture)} > {shlex.quote(str(run_dir / rel))} || "
        f"echo {shlex.quote(f'benchbed: could not record {rel} with {capture[0]}')} >&2"
        for rel, capture in plan.captures.items()
    ]
    steps.append(f"exec {shlex.join(plan.argv)}")
    if container:  # pyxis: the whole sequence runs inside the image on the first node
        srun = ["srun", "--nodes=1", "--ntasks=1", "--overlap", *container]
        lines.append(f"exec {shlex.join([*srun, 'bash', '-c', chr(10).join(steps)])}")
    else:
        lines += steps
    return "\n".join(lines) + "\n"


def _check_script_values(spec: ExperimentSpec, header: dict[str, str | None], options: list[str],
                         env: dict[str, str]) -> None:  # fmt: skip
    """Refuse what would break out of its line of the script: a line break in an #SBATCH value, an environment
    name `export` does not accept (values are quoted, names cannot be)."""
    for flag, value in [*header.items(), *(("sbatch_options", o) for o in options)]:
        if value is not None and ("\n" in value or "\r" in value):
            raise SpecError(f"{spec.source}: [slurm] {flag.lstrip('-')} holds a line break; an #SBATCH line cannot")
    bad = [name for name in env if not is_variable_name(name)]
    if bad:
        raise SpecError(f"{spec.source}: environment variable name {bad[0]!r} is not one a shell can export")


def wants_ray_cluster(options: SlurmOptions, plan: LaunchPlan, nodes: int) -> bool:
    """A `ray job submit` command needs a cluster to submit to; a multi-node job needs one to span the nodes."""
    if options.ray_cluster is not None:
        return options.ray_cluster
    return is_ray_submit(plan.argv) or nodes > 1


def ray_worker_lines(nodes: int, gpus_per_node: int, container: list[str]) -> list[str]:
    """A Ray worker on every node but the first, each through srun (in the image when there is one)."""
    start = ["ray", "start", f"--num-gpus={gpus_per_node}", "--disable-usage-stats", "--block"]
    return [
        f"# Ray cluster over the allocation: the head on this node, workers on the other {nodes - 1} node(s)",
        "export ray_head_ip=$(hostname --ip-address | awk '{print $1}')",
        'for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST" | tail -n +2); do',
        f'  srun --nodes=1 --ntasks=1 --overlap -w "$node" {shlex.join([*container, *start])} '
        f'--address="$ray_head_ip:{RAY_PORT}" &',
        "done",
    ]


def ray_head_steps(nodes: int, gpus_per_node: int) -> list[str]:
    """The head (dashboard on RAY_DASHBOARD_PORT, where slime's `ray job submit` looks), a bounded wait until all
    nodes joined, and RAY_ADDRESS for a driver that calls ray.init (verl)."""
    address = f'"$ray_head_ip:{RAY_PORT}"'
    return [
        f'ray start --head --node-ip-address="$ray_head_ip" --port={RAY_PORT} --dashboard-host=0.0.0.0 '
        f"--dashboard-port={RAY_DASHBOARD_PORT} --num-gpus={gpus_per_node} --disable-usage-stats --block &",
        f"for _ in $(seq 1 {RAY_READY_TRIES}); do joined=$(ray status --address={address} 2>/dev/null "
        f'| grep -c " node_"); [ "${{joined:-0}}" -ge {nodes} ] && break; sleep 2; done',
        f'[ "${{joined:-0}}" -ge {nodes} ] || '
        f'{{ echo "benchbed: only ${{joined:-0}} of {nodes} Ray node(s) joined" >&2; exit 1; }}',
        f"export RAY_ADDRESS={address}",
    ]


def _container_options(options: SlurmOptions, run_dir: Path, cwd: str) -> list[str]:
    """pyxis/enroot srun options for [slurm].container_image (the run dir and working dir mounted), or none."""
    if not options.container_image:
        return []
    mounts = [f"{run_dir}:{run_dir}"]
    if cwd != str(run_dir):
        mounts.append(f"{cwd}:{cwd}")
    mounts += options.container_mounts
    return [
        f"--container-image={options.container_image}",
        f"--container-mounts={','.join(mounts)}",
        f"--container-workdir={cwd}",
    ]
