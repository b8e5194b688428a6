"""The launcher options shared by commands that launch (`run`, `nightly`): --launcher and the Ray address."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from benchbed.adapter import LaunchPlan
from benchbed.launch.base import LAUNCHERS, Launcher, get_launcher
from benchbed.secrets import redact_env
from benchbed.shell import comment, heredoc
from benchbed.spec import ExperimentSpec


def launcher_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --launcher, --ray-address and --ray-working-dir; the command receives them as keyword arguments."""
    options = [
        click.option("--launcher", type=click.Choice(LAUNCHERS), default="local", show_default=True,
                     help="where to launch: local subprocess, a Ray job (Job Submission SDK), or an sbatch job"),
        click.option("--ray-address", default=None, metavar="URL",
                     help="--launcher ray: the Ray dashboard address, e.g. http://head:8265 (else RAY_ADDRESS, "
                     "then [ray].address, then the address in the framework's own `ray job submit`)"),
        click.option("--ray-working-dir", default=None, type=click.Path(exists=True, file_okay=False),
                     help="--launcher ray: upload this directory as the job's working_dir (only when given)"),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def build_launcher(launcher: str, ray_address: str | None = None, ray_working_dir: str | None = None) -> Launcher:
    """The Launcher the options name."""
    if launcher == "ray":
        return get_launcher("ray", address=ray_address, working_dir=ray_working_dir)
    if ray_address or ray_working_dir:
        raise click.UsageError("--ray-address and --ray-working-dir apply to --launcher ray only")
    return get_launcher(launcher)


def describe_launch(launcher: Launcher, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> list[str]:
    """What --dry-run adds for a scheduler: the sbatch script, or the Ray entrypoint and runtime env (masked)."""
    if launcher.name == "slurm" and plan.submits_job is None:
        from benchbed.launch.sbatch import SCRIPT_NAME, render_script

        script = render_script(spec, plan, run_dir)
        return [
            comment(f"file {SCRIPT_NAME} (submitted with sbatch --parsable):"),
            heredoc(run_dir / SCRIPT_NAME, script),
        ]
    if launcher.name == "ray":
        request = launcher.request(spec, plan, run_dir)  # type: ignore[attr-defined]
        runtime_env = dict(request.pop("runtime_env") or {})
        if "env_vars" in runtime_env:
            runtime_env["env_vars"] = redact_env(runtime_env["env_vars"])
        shown = {k: v for k, v in request.items() if v is not None and k != "cwd"}
        return [comment(f"Ray job (submit_job arguments): {json.dumps({**shown, 'runtime_env': runtime_env})}")]
    return []
