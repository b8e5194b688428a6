"""The launcher options shared by commands that launch (`run`, `nightly`): --launcher and the Ray address."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from benchbed.errors import LaunchError
from benchbed.launch.base import Launcher, get_launcher


def launcher_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --launcher, --ray-address and --ray-working-dir; the command receives them as keyword arguments."""
    options = [
        click.option("--launcher", default="local", show_default=True, metavar="NAME",
                     help="where to launch: local (a subprocess), ray (a Ray job, Job Submission SDK), slurm (an "
                     "sbatch job), or a launcher a package registers in the benchbed.launchers entry-point group"),
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
    """The Launcher the options name; an unknown name is a usage error (exit 2) naming the registered ones."""
    if launcher != "ray" and (ray_address or ray_working_dir):
        raise click.UsageError("--ray-address and --ray-working-dir apply to --launcher ray only")
    options = {"address": ray_address, "working_dir": ray_working_dir} if launcher == "ray" else {}
    try:
        return get_launcher(launcher, **options)
    except LaunchError as exc:
        raise click.UsageError(f"--launcher: {exc}") from None
