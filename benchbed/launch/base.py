"""The launcher contract: run a LaunchPlan somewhere, stream its output into run_dir/logs, say how it ended."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from benchbed.errors import LaunchError
from benchbed.launch.signals import stop_signals_interrupt
from benchbed.record import LaunchInfo

if TYPE_CHECKING:
    from benchbed.adapter import LaunchPlan
    from benchbed.spec import ExperimentSpec

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


@runtime_checkable
class Launcher(Protocol):
    """Runs a rendered plan for a spec; blocks until the job reaches a terminal state, the timeout, or Ctrl-C.

    On a timeout, Ctrl-C or SIGTERM the launcher stops the job (nothing is left running) before returning;
    an interrupt is reported as `interrupted=True`, not raised. A launcher may also define
    `preflight(spec, plan, run_dir)`, called for every spec before anything runs or is stored, to refuse what it
    cannot launch with a BenchbedError (exit 2)."""

    name: str

    def launch(
        self,
        spec: ExperimentSpec,
        plan: LaunchPlan,
        run_dir: Path,
        timeout_s: float | None = None,
        on_line: OnLine | None = None,
    ) -> LaunchResult: ...


LAUNCHERS = ("local", "ray", "slurm")


def get_launcher(name: str, **options: object) -> Launcher:
    """The launcher called `name`, built with its options (e.g. address= for ray); imports lazily."""
    if name == "local":
        from benchbed.launch.local import LocalLauncher

        return LocalLauncher()
    if name == "ray":
        from benchbed.launch.ray import RayLauncher

        return RayLauncher(**options)  # type: ignore[arg-type]
    if name == "slurm":
        from benchbed.launch.slurm import SlurmLauncher

        return SlurmLauncher(**options)  # type: ignore[arg-type]
    raise LaunchError(f"unknown launcher {name!r}; expected one of: {', '.join(LAUNCHERS)}")


def sigterm_as_interrupt() -> contextlib.AbstractContextManager[None]:
    """While launching, SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C, so the job is stopped, not
    orphaned (benchbed.launch.signals, which also names the signal)."""
    return stop_signals_interrupt()
