"""Run a LaunchPlan as a local subprocess in the run directory, logs streamed into logs/, timeout enforced."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchbed.adapters.base import LaunchPlan
from benchbed.errors import LaunchError
from benchbed.launch.signals import signal_name, stop_signals_interrupt
from benchbed.secrets import redact, secret_values

TERMINATE_GRACE_S = 5.0
LOG_TAIL_CHARS = 4000


@dataclass
class LaunchResult:
    """How a launch ended."""

    exit_code: int | None
    duration_s: float
    timed_out: bool
    interrupted: bool
    stdout_path: Path
    stderr_path: Path
    warnings: list[str]
    stop_signal: str = ""  # the signal that interrupted the launch: SIGINT (Ctrl-C), SIGTERM or SIGHUP

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The end of stderr (or stdout if stderr is empty), already redacted when it was written."""
        for path in (self.stderr_path, self.stdout_path):
            if path.exists() and path.stat().st_size:
                with path.open("rb") as fh:
                    fh.seek(max(0, path.stat().st_size - chars))
                    return fh.read().decode(errors="replace")
        return ""


def write_plan_files(plan: LaunchPlan, run_dir: Path) -> None:
    """Materialise the plan's config files inside the run directory."""
    for rel, text in plan.files.items():
        target = (run_dir / rel).resolve()
        if run_dir.resolve() not in target.parents:
            raise LaunchError(f"plan file {rel!r} would be written outside the run directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


CAPTURE_TIMEOUT_S = 60.0


def run_captures(plan: LaunchPlan, run_dir: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """Record the launch environment (e.g. pip freeze) into the run directory; failures become warnings."""
    warnings = []
    for rel, argv in plan.captures.items():
        try:
            out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=CAPTURE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            warnings.append(f"could not record {rel} with {argv[0]!r}: {exc}")
            continue
        if out.returncode != 0:
            warnings.append(f"could not record {rel}: {' '.join(argv)} exited {out.returncode}")
            continue
        (run_dir / rel).write_bytes(out.stdout)
    return warnings


def _pump(stream: IO[bytes], sink: IO[bytes], on_line: Callable[[str], None] | None, secrets: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        if secrets:
            line = redact(line, secrets)
        sink.write(line.encode())
        sink.flush()
        if on_line is not None:
            on_line(line.rstrip("\n"))
    stream.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's process group, then SIGKILL whatever is left after a grace period."""
    for sig, wait in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure its group is too.
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_plan(
    plan: LaunchPlan,
    run_dir: Path,
    timeout_s: float | None = None,
    on_line: Callable[[str], None] | None = None,
) -> LaunchResult:
    """Start the plan in its own process group and wait; the timeout, Ctrl-C, SIGTERM or SIGHUP kill the whole
    group (a signal is then re-raised by the caller once the record is finalised)."""
    run_dir = Path(run_dir)
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    write_plan_files(plan, run_dir)
    timeout_s = timeout_s if timeout_s is not None else plan.timeout_s
    env = {**os.environ, **plan.env}
    cwd = Path(plan.cwd) if plan.cwd else run_dir
    if not cwd.is_dir():
        raise LaunchError(f"working directory {cwd} does not exist; check the spec or the checkout path")
    stdout_path, stderr_path = logs / "stdout.log", logs / "stderr.log"
    warnings = run_captures(plan, run_dir, env, cwd)
    secrets = secret_values(env)
    with stop_signals_interrupt():
        return _launch(plan, env, cwd, timeout_s, on_line, secrets, (stdout_path, stderr_path), warnings)


def _launch(
    plan: LaunchPlan,
    env: dict[str, str],
    cwd: Path,
    timeout_s: float | None,
    on_line: Callable[[str], None] | None,
    secrets: list[str],
    log_paths: tuple[Path, Path],
    warnings: list[str],
) -> LaunchResult:
    """Start the process group, pump its output into the logs, and stop it on timeout or on any stop signal."""
    stdout_path, stderr_path = log_paths
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            plan.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise LaunchError(f"cannot start {plan.argv[0]!r}: not found; is it installed and on PATH?") from exc
    except PermissionError as exc:
        raise LaunchError(f"cannot start {plan.argv[0]!r}: permission denied") from exc
    timed_out = interrupted = False
    stop_signal = ""
    with stdout_path.open("wb") as out_sink, stderr_path.open("wb") as err_sink:
        pumps = [
            threading.Thread(target=_pump, args=(proc.stdout, out_sink, None, secrets), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err_sink, on_line, secrets), daemon=True),
        ]
        for pump in pumps:
            pump.start()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP turned into one by stop_signals_interrupt
            interrupted = True
            stop_signal = signal_name(exc)
            _kill_group(proc)
        finally:
            if proc.poll() is None:
                _kill_group(proc)
            for pump in pumps:
                pump.join(timeout=TERMINATE_GRACE_S)
    return LaunchResult(
        exit_code=proc.returncode,
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        interrupted=interrupted,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        warnings=warnings,
        stop_signal=stop_signal,
    )
