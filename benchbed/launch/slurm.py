"""`--launcher slurm`: the plan as an sbatch job, followed with squeue/sacct (scontrol without accounting),
its output streamed from logs/, cancelled with scancel on Ctrl-C, SIGTERM or the timeout."""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchbed.adapter import LaunchPlan
from benchbed.launch.base import Launcher, LaunchResult, OnLine, sigterm_as_interrupt
from benchbed.launch.local import LocalLauncher, write_plan_files
from benchbed.launch.sbatch import SCRIPT_NAME, STDERR_LOG, STDOUT_LOG, render_script
from benchbed.launch.slurm_jobs import follow, slurm_info, submit
from benchbed.launch.slurm_options import SlurmOptions
from benchbed.launch.watchdog import Watchdog
from benchbed.record import LaunchInfo
from benchbed.secrets import redact, secret_values
from benchbed.shell import comment, heredoc
from benchbed.spec.model import ExperimentSpec


class _FileTail:
    """Reads what Slurm appended to a log file since the last call and hands its complete lines on."""

    def __init__(self, path: Path, on_line: OnLine | None, secrets: list[str]) -> None:
        self.path, self.on_line, self.secrets = path, on_line, secrets
        self.offset = 0
        self.partial = b""

    def poll(self) -> None:
        if self.on_line is None or not self.path.exists():
            return
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self.on_line(redact(line.decode(errors="replace"), self.secrets))


def redact_file(path: Path, secrets: list[str]) -> None:
    """Mask secret values in a log Slurm wrote directly (benchbed never sees those bytes in flight)."""
    if not secrets or not path.exists():
        return
    text = path.read_bytes().decode(errors="replace")
    cleaned = redact(text, secrets)
    if cleaned != text:
        path.write_text(cleaned)


class SlurmLauncher(Launcher):
    """Submits the rendered sbatch script and follows the job to a terminal state."""

    name = "slurm"
    options_model = SlurmOptions

    def describe(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> list[str]:
        """The sbatch script --dry-run shows (none when the framework submits its own job)."""
        if plan.submits_job is not None:
            return []
        script = render_script(spec, plan, run_dir)
        return [
            comment(f"file {SCRIPT_NAME} (submitted with sbatch --parsable):"),
            heredoc(run_dir / SCRIPT_NAME, script),
        ]

    def launch(
        self,
        spec: ExperimentSpec,
        plan: LaunchPlan,
        run_dir: Path,
        timeout_s: float | None = None,
        on_line: OnLine | None = None,
    ) -> LaunchResult:
        if plan.submits_job == "slurm":  # prime-rl multi-node: `rl` calls sbatch itself
            return LocalLauncher().launch(spec, plan, run_dir, timeout_s=timeout_s, on_line=on_line)
        run_dir = Path(run_dir).resolve()
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)
        write_plan_files(plan, run_dir)
        script = run_dir / SCRIPT_NAME
        script.write_text(render_script(spec, plan, run_dir))
        env = {**os.environ, **plan.env}
        secrets = secret_values(env)
        start = time.monotonic()
        with sigterm_as_interrupt():  # from submission on, SIGTERM is a Ctrl-C: the job is cancelled
            job_id = submit(script, env)
            info = LaunchInfo(scheduler="slurm", job_id=job_id)
            with Watchdog(command=["scancel", job_id]):  # benchbed killed (SIGKILL, OOM): the job is cancelled
                result = follow(job_id, info, timeout_s, start,
                                poll=_FileTail(run_dir / STDERR_LOG, on_line, secrets).poll)  # fmt: skip
        info.address, info.version = slurm_info()
        for rel in (STDOUT_LOG, STDERR_LOG):
            redact_file(run_dir / rel, secrets)
        return LaunchResult(stdout_path=run_dir / STDOUT_LOG, stderr_path=run_dir / STDERR_LOG, remote=True, **result)
