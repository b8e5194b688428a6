"""The launcher options shared by commands that launch (`run`, `nightly`): --launcher, and the flags each
registered launcher declares (`Launcher.flags`, e.g. ray's --ray-address), gathered into `launcher_flags`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from benchbed.errors import BenchbedError, LaunchError
from benchbed.launch.base import LAUNCHERS, Launcher, LauncherFlag, get_launcher


def _declared_flags() -> dict[str, tuple[str, LauncherFlag]]:
    """Option name (as click passes it) -> (the launcher that owns it, the flag), over the launchers that load."""
    found: dict[str, tuple[str, LauncherFlag]] = {}
    for name in LAUNCHERS.names():
        try:
            flags = LAUNCHERS.load(name).flags
        except BenchbedError:  # a launcher that cannot load adds no flag; choosing it fails with its error
            continue
        for flag in flags:
            found[flag.flag.lstrip("-").replace("-", "_")] = (name, flag)
    return found


def launcher_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --launcher and every launcher's flags; the command receives `launcher` and `launcher_flags` (option
    name -> value, for `build_launcher`)."""
    declared = _declared_flags()

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        kwargs["launcher_flags"] = {key: kwargs.pop(key) for key in declared}
        return command(*args, **kwargs)

    options = [
        click.option("--launcher", default="local", show_default=True, metavar="NAME",
                     help="where to launch: local (a subprocess), ray (a Ray job, Job Submission SDK), slurm (an "
                     "sbatch job), or a launcher a package registers in the benchbed.launchers entry-point group"),
        *(click.option(flag.flag, default=None, metavar=flag.metavar, help=flag.help,
                       type=click.Path(exists=True, file_okay=False) if flag.directory else None)
          for _, flag in declared.values()),
    ]  # fmt: skip
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def build_launcher(launcher: str, launcher_flags: dict[str, Any]) -> Launcher:
    """The Launcher the options name, built with its own flags; a flag of another launcher, or an unknown
    launcher, is a usage error (exit 2) naming the registered ones."""
    declared = _declared_flags()
    for key, value in launcher_flags.items():
        owner = declared[key][0]
        if value is not None and owner != launcher:
            owned = " and ".join(flag.flag for name, flag in declared.values() if name == owner)
            raise click.UsageError(f"{owned} apply to --launcher {owner} only")
    options = {declared[key][1].keyword: value for key, value in launcher_flags.items() if value is not None}
    try:
        return get_launcher(launcher, **options)
    except LaunchError as exc:
        raise click.UsageError(f"--launcher: {exc}") from None
