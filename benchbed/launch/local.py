"""Run a LaunchPlan as a local subprocess in the run directory, logs streamed into logs/, timeout enforced."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import psutil

from benchbed.adapter import LaunchPlan
from benchbed.errors import LaunchError
from benchbed.launch.base import Launcher, LaunchResult, OnLine, sigterm_as_interrupt
from benchbed.launch.signals import signal_name
from benchbed.launch.slurm_jobs import follow_framework_job
from benchbed.launch.watchdog import Watchdog, die_with_parent
from benchbed.secrets import redact, secret_values
from benchbed.spec.model import ExperimentSpec

TERMINATE_GRACE_S = 5.0


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
    """Copy the child's output into its log; a log that cannot be written (a full disk) is given up, but the
    stream is still drained, so the child never blocks on a full pipe."""
    writable = True
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        if secrets:
            line = redact(line, secrets)
        if writable:
            try:
                sink.write(line.encode())
                sink.flush()
            except OSError:
                writable = False
        if on_line is not None:
            on_line(line.rstrip("\n"))
    stream.close()


def _descendants(pid: int) -> list[psutil.Process]:
    """Every process below `pid` now (psutil walks the tree), including those that left its process group or
    session (`setsid`, a daemonising launcher), which a group kill misses."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_all(procs: list[psutil.Process], sig: int) -> None:
    for one in procs:
        with contextlib.suppress(psutil.Error):
            one.send_signal(sig)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's process group and every descendant (found before any is signalled, so none is lost to
    re-parenting), then SIGKILL whatever is left after a grace period."""
    tree = _descendants(proc.pid)
    for sig, wait in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        _signal_all(tree, sig)
        deadline = None if wait is None else time.monotonic() + wait
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        _, tree = psutil.wait_procs(tree, timeout=0 if deadline is None else max(0.0, deadline - time.monotonic()))
        if sig == signal.SIGTERM:  # the leader is gone; make sure its group and its tree are too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            _signal_all(tree, signal.SIGKILL)
        return


def run_plan(
    plan: LaunchPlan,
    run_dir: Path,
    timeout_s: float | None = None,
    on_line: Callable[[str], None] | None = None,
) -> LaunchResult:
    """Start the plan in its own process group and wait; Ctrl-C or the timeout kill the whole group."""
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
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            plan.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=die_with_parent,  # its own session, and SIGTERM if benchbed dies
        )
    except FileNotFoundError as exc:
        raise LaunchError(f"cannot start {plan.argv[0]!r}: not found; {missing_program_hint(plan.argv[0])}") from exc
    except PermissionError as exc:
        raise LaunchError(f"cannot start {plan.argv[0]!r}: permission denied") from exc
    timed_out = interrupted = False
    stop_signal = ""
    with Watchdog(pgid=proc.pid), stdout_path.open("wb") as out_sink, stderr_path.open("wb") as err_sink:
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
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP turned into one by sigterm_as_interrupt
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


class LocalLauncher(Launcher):
    """The default: the plan as a subprocess of benchbed on this machine."""

    name = "local"

    def launch(
        self,
        spec: ExperimentSpec,
        plan: LaunchPlan,
        run_dir: Path,
        timeout_s: float | None = None,
        on_line: OnLine | None = None,
    ) -> LaunchResult:
        with sigterm_as_interrupt():
            result = run_plan(plan, run_dir, timeout_s=timeout_s, on_line=on_line)
        if plan.submits_job == "slurm":
            return follow_framework_job(spec, result, timeout_s=timeout_s)
        return result


def missing_program_hint(program: str) -> str:
    """What to do about a program that is not there: one inside a framework environment that `make` builds
    (`.envs/NAME/...`, as the verl-cpu and trl-vllm specs name their Python) names its make target."""
    parts = Path(program).parts
    if ".envs" in parts[:-1]:
        name = parts[parts.index(".envs") + 1]
        if name != parts[-1]:
            return f"build that environment with `make {name}` in the benchbed checkout"
    return "is it installed and on PATH?"
