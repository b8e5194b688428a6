"""The launcher contract: run a LaunchPlan somewhere, stream its output into run_dir/logs, say how it ended."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from benchbed.errors import LaunchError
from benchbed.launch.signals import stop_signals_interrupt
from benchbed.record import LaunchInfo
from benchbed.registry import Registry

if TYPE_CHECKING:
    from benchbed.adapter import LaunchPlan
    from benchbed.spec.model import ExperimentSpec

LOG_TAIL_CHARS = 4000


@dataclass
class LaunchResult:
    """How a launch ended; `info` carries the scheduler's job id, version, nodes and final state."""

    exit_code: int | None
    duration_s: float
    timed_out: bool
    interrupted: bool
    stdout_path: Path
    stderr_path: Path
    warnings: list[str]
    info: LaunchInfo | None = None
    remote: bool = False  # the job ran where benchbed reads its outputs through a shared filesystem only
    failure: str = ""  # why a scheduler said the job did not succeed, when there is no exit code to say it
    stop_signal: str = ""  # the signal that interrupted the launch, when known: SIGINT, SIGTERM or SIGHUP

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted and not self.failure

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The end of stderr (or stdout if stderr is empty), already redacted when it was written."""
        for path in (self.stderr_path, self.stdout_path):
            if path.exists() and path.stat().st_size:
                with path.open("rb") as fh:
                    fh.seek(max(0, path.stat().st_size - chars))
                    return fh.read().decode(errors="replace")
        return ""


OnLine = Callable[[str], None]


@dataclass(frozen=True)
class LauncherFlag:
    """A command-line option a launcher owns: `flag` (e.g. "--ray-address") is passed to the launcher's constructor
    as `keyword`; `directory`: the value must be an existing directory."""

    flag: str
    keyword: str
    help: str
    metavar: str | None = None
    directory: bool = False


class Launcher(ABC):
    """Runs a rendered plan for a spec; blocks until the job reaches a terminal state, the timeout, or Ctrl-C.

    On a timeout, Ctrl-C or SIGTERM the launcher stops the job (nothing is left running) before returning;
    an interrupt is reported as `interrupted=True`, not raised. Launchers are registered in the
    `benchbed.launchers` entry-point group (local, ray and slurm are; a site adds its own the same way) and built
    with the keyword options `get_launcher` passes (e.g. `address=` for ray).

    Optional, typed: `options_model`, the pydantic model (extra="forbid") of the spec's table named after the
    launcher (e.g. `[slurm]`), validated when a spec is bound (`spec.launcher_options(name)` returns it);
    `flags`, the command-line options of `run` and `nightly` that build it."""

    name: ClassVar[str]
    options_model: ClassVar[type[BaseModel] | None] = None
    flags: ClassVar[tuple[LauncherFlag, ...]] = ()

    @abstractmethod
    def launch(
        self,
        spec: ExperimentSpec,
        plan: LaunchPlan,
        run_dir: Path,
        timeout_s: float | None = None,
        on_line: OnLine | None = None,
    ) -> LaunchResult:
        """Run `plan` with its outputs in `run_dir`; stream each output line to `on_line`."""

    def preflight(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> None:
        """Called for every spec before anything runs or is stored: refuse what this launcher cannot launch with a
        BenchbedError (exit 2). By default everything can be launched."""
        return None

    def describe(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> list[str]:
        """What `--dry-run` prints besides the plan: the job as the scheduler would get it (secrets masked)."""
        return []


LAUNCHERS: Registry[type[Launcher]] = Registry("benchbed.launchers", "launcher", Launcher, LaunchError)


def available_launchers() -> list[str]:
    """Names registered as launchers (nothing is imported)."""
    return LAUNCHERS.names()


def get_launcher(name: str, **options: Any) -> Launcher:
    """The launcher registered as `name`, built with its options (e.g. address= for ray); imports lazily."""
    return LAUNCHERS.load(name)(**options)


def sigterm_as_interrupt() -> contextlib.AbstractContextManager[None]:
    """While launching, SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C, so the job is stopped, not
    orphaned (benchbed.launch.signals, which also names the signal)."""
    return stop_signals_interrupt()
