"""Slurm jobs from the outside: submit, query, cancel and follow a job to its end with sbatch, squeue, sacct and
scancel; shared by the slurm launcher and by the local launcher when a framework submits its own job."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbed.errors import LaunchError
from benchbed.launch.base import LaunchResult, sigterm_as_interrupt
from benchbed.launch.watchdog import Watchdog
from benchbed.record import LaunchInfo
from benchbed.spec.model import ExperimentSpec

POLL_S = 0.5
CANCEL_WAIT_S = 60.0
COMMAND_TIMEOUT_S = 30.0
ACTIVE_STATES = {
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
    "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD",
}  # fmt: skip
SUBMITTED = re.compile(r"Submitted batch job (\d+)")


@dataclass
class JobState:
    """What Slurm says about a job now: its state, exit code (None while running), and node list."""

    state: str
    exit_code: int | None = None
    nodes: str = ""
    reason: str = ""

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


def _slurm(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=env)
    except FileNotFoundError:
        raise LaunchError(f"--launcher slurm needs {argv[0]!r} on PATH (Slurm client commands)") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"{argv[0]} did not answer within {COMMAND_TIMEOUT_S:.0f}s; is slurmctld up?") from None


def submit(script: Path, env: dict[str, str]) -> str:
    """`sbatch --parsable SCRIPT` -> job id."""
    out = _slurm("sbatch", "--parsable", str(script), env=env)
    if out.returncode != 0:
        raise LaunchError(f"sbatch refused the job: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout.strip().split(";")[0]


def job_state(job_id: str) -> JobState:
    """squeue while the job is known to the controller; then sacct, or scontrol when accounting is off."""
    out = _slurm("squeue", "-h", "--states=all", "-j", job_id, "-o", "%T|%N|%r")
    fields = out.stdout.strip().splitlines()[0].split("|") if out.returncode == 0 and out.stdout.strip() else []
    if fields and fields[0] in ACTIVE_STATES:
        return JobState(state=fields[0], nodes=fields[1], reason=fields[2])
    return final_state(job_id)


def final_state(job_id: str) -> JobState:
    if shutil.which("sacct"):
        out = _slurm("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode,NodeList,Reason")
        line = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
        if line:
            state, code, nodes, reason = (line.split("|") + ["", "", "", ""])[:4]
            return JobState(state=state.split()[0], exit_code=_exit_code(code), nodes=nodes, reason=reason)
    out = _slurm("scontrol", "-o", "show", "job", job_id)
    if out.returncode != 0:
        raise LaunchError(f"Slurm job {job_id} is unknown to squeue, sacct and scontrol: {out.stderr.strip()}")
    fields = dict(re.findall(r"(\w+)=(\S*)", out.stdout))
    state = fields.get("JobState", "UNKNOWN")
    code = _exit_code(fields.get("ExitCode", "")) if state not in ACTIVE_STATES else None
    nodes = fields.get("NodeList", "").replace("(null)", "")
    return JobState(state=state, exit_code=code, nodes=nodes, reason=fields.get("Reason", ""))


def _exit_code(text: str) -> int | None:
    """Slurm's `code:signal` -> the code, or -signal when a signal ended it."""
    code, _, sig = text.partition(":")
    if not code.isdigit():
        return None
    return -int(sig) if sig.isdigit() and int(sig) and not int(code) else int(code)


def cancel(job_id: str) -> list[str]:
    """scancel, then wait until Slurm says the job ended; a job that outlives the wait is a warning."""
    out = _slurm("scancel", job_id)
    if out.returncode != 0:
        return [f"scancel {job_id} failed: {out.stderr.strip()}"]
    deadline = time.monotonic() + CANCEL_WAIT_S
    while time.monotonic() < deadline:
        if not job_state(job_id).active:
            return []
        time.sleep(POLL_S)
    return [f"Slurm job {job_id} was cancelled but is still active after {CANCEL_WAIT_S:.0f}s"]


def hostnames(nodelist: str) -> list[str]:
    """`node[1-3]` -> node1, node2, node3 (scontrol's own expansion)."""
    if not nodelist:
        return []
    out = _slurm("scontrol", "show", "hostnames", nodelist)
    return out.stdout.split() if out.returncode == 0 else [nodelist]


def slurm_info() -> tuple[str, str]:
    """(cluster name, Slurm version) for the record."""
    version = _slurm("sbatch", "--version").stdout.strip()
    config = _slurm("scontrol", "show", "config").stdout
    cluster = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.M)
    return (cluster.group(1) if cluster else ""), version.removeprefix("slurm-wlm ").removeprefix("slurm ")


def follow(
    job_id: str, info: LaunchInfo, timeout_s: float | None, start: float, poll: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Wait for the job to end (cancelling it on timeout, Ctrl-C or SIGTERM); fill `info` with nodes and state."""
    timed_out = interrupted = False
    warnings: list[str] = []
    nodes = ""
    try:
        with sigterm_as_interrupt():
            while True:
                state = job_state(job_id)
                nodes = state.nodes or nodes
                if poll is not None:
                    poll()
                if not state.active:
                    break
                if timeout_s is not None and time.monotonic() - start >= timeout_s:
                    timed_out = True
                    break
                time.sleep(POLL_S)
    except KeyboardInterrupt:
        interrupted = True
    if timed_out or interrupted:
        warnings += cancel(job_id)
        state = job_state(job_id)
        if poll is not None:
            poll()
    info.state = state.state
    info.nodes = hostnames(state.nodes or nodes)
    failure = ""
    if state.state != "COMPLETED" and not (timed_out or interrupted):
        reason = f" ({state.reason})" if state.reason and state.reason != "None" else ""
        failure = f"Slurm job {job_id} ended {state.state}{reason}"
    return {
        "exit_code": state.exit_code,
        "duration_s": time.monotonic() - start,
        "timed_out": timed_out,
        "interrupted": interrupted,
        "warnings": warnings,
        "info": info,
        "failure": failure,
    }


def follow_framework_job(spec: ExperimentSpec, result: LaunchResult, timeout_s: float | None) -> LaunchResult:
    """A framework that ran sbatch itself (prime-rl multi-node): follow the job it printed, record it as its own."""
    info = LaunchInfo(scheduler="slurm", submitted_by=spec.adapter)
    result.info = info
    if not result.ok:
        return result
    printed = "\n".join(p.read_text(errors="replace") for p in (result.stdout_path, result.stderr_path) if p.exists())
    found = SUBMITTED.findall(printed)
    if not found:
        result.warnings.append(
            f"{spec.adapter} was expected to submit its own Slurm job, but no 'Submitted batch job N' line appeared"
        )
        return result
    info.job_id = found[-1]
    info.address, info.version = slurm_info()
    remaining = None if timeout_s is None else max(0.0, timeout_s - result.duration_s)
    # SIGTERM cancels the job like Ctrl-C; benchbed killed outright (SIGKILL, OOM): its watchdog cancels it
    with sigterm_as_interrupt(), Watchdog(command=["scancel", info.job_id]):
        followed = follow(info.job_id, info, remaining, time.monotonic())
    result.exit_code = followed["exit_code"]
    result.duration_s += followed["duration_s"]
    result.timed_out, result.interrupted = followed["timed_out"], followed["interrupted"]
    result.warnings += followed["warnings"]
    result.failure = followed["failure"]
    result.remote = True
    return result
