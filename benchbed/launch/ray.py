"""`--launcher ray`: the plan as a Ray job (Job Submission SDK), logs streamed into logs/, stopped on interrupt."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any

from benchbed.adapter import LaunchPlan
from benchbed.errors import LaunchError
from benchbed.launch.base import Launcher, LauncherFlag, LaunchResult, OnLine, sigterm_as_interrupt
from benchbed.launch.local import write_plan_files
from benchbed.launch.ray_options import RayOptions
from benchbed.launch.ray_submission import RaySubmission, entrypoint, unwrap, with_env
from benchbed.launch.signals import signal_name
from benchbed.launch.watchdog import Watchdog
from benchbed.record import LaunchInfo
from benchbed.secrets import redact, redact_env, secret_values
from benchbed.shell import comment
from benchbed.spec.model import ExperimentSpec

POLL_S = 0.5
STOP_WAIT_S = 30.0
LOG_JOIN_S = 10.0


# What the watchdog runs when benchbed dies during a Ray job: the Jobs API's stop, with Ray's own SDK.
STOP_JOB = "import sys; from ray.job_submission import JobSubmissionClient as C; C(sys.argv[1]).stop_job(sys.argv[2])"


class RayLauncher(Launcher):
    """Submits the plan with Ray's JobSubmissionClient and follows it to a terminal state."""

    name = "ray"
    options_model = RayOptions
    flags = (
        LauncherFlag("--ray-address", "address", metavar="URL",
                     help="--launcher ray: the Ray dashboard address, e.g. http://head:8265 (else RAY_ADDRESS, "
                     "then [ray].address, then the address in the framework's own `ray job submit`)"),
        LauncherFlag("--ray-working-dir", "working_dir", directory=True,
                     help="--launcher ray: upload this directory as the job's working_dir (only when given)"),
    )  # fmt: skip

    def __init__(self, address: str | None = None, working_dir: str | None = None) -> None:
        self.address = address
        self.working_dir = working_dir

    def launch(
        self,
        spec: ExperimentSpec,
        plan: LaunchPlan,
        run_dir: Path,
        timeout_s: float | None = None,
        on_line: OnLine | None = None,
    ) -> LaunchResult:
        if plan.submits_job is not None:
            raise LaunchError(
                f"{spec.name}: this launch submits its own {plan.submits_job} job; run it with "
                f"--launcher {plan.submits_job} or local, not ray"
            )
        run_dir = Path(run_dir).resolve()
        logs = run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        write_plan_files(plan, run_dir)
        request = self.request(spec, plan, run_dir)
        address = self.resolve_address(spec, plan, run_dir)
        client = _client(address)
        runtime_env = request["runtime_env"] or {}
        staging = _stage_working_dir(runtime_env, plan) if request["cwd"] is None else None
        secrets = secret_values({**os.environ, **runtime_env.get("env_vars", {})})
        stdout_path, stderr_path = logs / "stdout.log", logs / "stderr.log"
        stderr_path.touch()
        start = time.monotonic()
        with sigterm_as_interrupt():  # from submission on, SIGTERM stops the job like Ctrl-C
            job_id = self._submit(client, address, request, staging, secrets)
            info = LaunchInfo(scheduler="ray", job_id=job_id, address=address)
            tail = _LogTail(client, job_id, stdout_path, on_line, secrets)
            timed_out = interrupted = False
            stop_signal = ""
            try:
                tail.start()
                info.version = _ray_version(address)
                with Watchdog(command=[sys.executable, "-c", STOP_JOB, address, job_id]):  # benchbed killed: stopped
                    timed_out = _wait(client, job_id, timeout_s, start) is None
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP turned into one by sigterm_as_interrupt
                interrupted, stop_signal = True, signal_name(exc)
            warnings = _stop(client, job_id) if timed_out or interrupted else []
        tail.finish()
        details = client.get_job_info(job_id)
        info.state = str(details.status.value if hasattr(details.status, "value") else details.status)
        info.nodes = _driver_node(details)
        exit_code = getattr(details, "driver_exit_code", None)
        failure = ""
        if info.state == "SUCCEEDED":
            exit_code = 0 if exit_code is None else exit_code
        elif not (timed_out or interrupted):
            said = redact((details.message or "").split("\n")[0], secrets).split(", last available logs")[0]
            failure = f"Ray job {job_id} ended {info.state}: {said}".rstrip(": ")
        return LaunchResult(
            exit_code=exit_code,
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            interrupted=interrupted,
            stop_signal=stop_signal,
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            warnings=warnings,
            info=info,
            remote=True,
            failure=failure,
        )

    @staticmethod
    def _submit(client: Any, address: str, request: dict[str, Any], staging: str | None, secrets: list[str]) -> str:
        try:
            return client.submit_job(**{k: v for k, v in request.items() if k != "cwd"})
        except Exception as exc:  # the SDK raises RuntimeError/ConnectionError/ValueError alike
            raise LaunchError(f"Ray job submission to {address} failed: {redact(str(exc), secrets)}") from None
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)

    def request(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> dict[str, Any]:
        """The submit_job arguments for this plan (and `cwd`, the directory the entrypoint changes to)."""
        options: RayOptions = spec.launcher_options(self.name)
        sub = unwrap(plan.argv, Path(plan.cwd) if plan.cwd else run_dir)
        runtime_env = self._runtime_env(plan, options, sub)
        cwd = plan.cwd or (None if "working_dir" in runtime_env else str(run_dir))
        return {
            "entrypoint": entrypoint(sub.argv, run_dir, cwd, plan.captures),
            "runtime_env": runtime_env or None,
            "entrypoint_num_cpus": options.entrypoint_num_cpus or sub.entrypoint_num_cpus,
            "entrypoint_num_gpus": options.entrypoint_num_gpus or sub.entrypoint_num_gpus,
            "entrypoint_memory": options.entrypoint_memory or sub.entrypoint_memory,
            "entrypoint_resources": {**sub.entrypoint_resources, **options.entrypoint_resources} or None,
            "submission_id": sub.submission_id,
            "metadata": {**sub.metadata, "benchbed_run_dir": str(run_dir), "benchbed_spec_id": spec.spec_id},
            "cwd": cwd,
        }

    def describe(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> list[str]:
        """The submit_job arguments --dry-run shows, the runtime env's variables masked."""
        request = self.request(spec, plan, run_dir)
        runtime_env = dict(request.pop("runtime_env") or {})
        if "env_vars" in runtime_env:
            runtime_env["env_vars"] = redact_env(runtime_env["env_vars"])
        shown = {k: v for k, v in request.items() if v is not None and k != "cwd"}
        return [comment(f"Ray job (submit_job arguments): {json.dumps({**shown, 'runtime_env': runtime_env})}")]

    def preflight(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> None:
        """Before anything is stored: the cluster address must be known (a usage error, not a failed run)."""
        self.resolve_address(spec, plan, run_dir)

    def resolve_address(self, spec: ExperimentSpec, plan: LaunchPlan, run_dir: Path) -> str:
        """--ray-address, else RAY_ADDRESS, else [ray].address, else the plan's own `ray job submit --address`."""
        sub = unwrap(plan.argv, Path(plan.cwd) if plan.cwd else run_dir)
        options: RayOptions = spec.launcher_options(self.name)
        address = self.address or os.environ.get("RAY_ADDRESS") or options.address or sub.address
        if not address:
            raise LaunchError("no Ray cluster address: pass --ray-address URL, set RAY_ADDRESS or [ray].address")
        return address

    def _runtime_env(self, plan: LaunchPlan, options: RayOptions, sub: RaySubmission) -> dict[str, Any]:
        runtime_env = with_env(sub.runtime_env, plan.env, options.env)
        working_dir = options.working_dir or self.working_dir
        if working_dir:
            runtime_env["working_dir"] = working_dir
        return runtime_env


def _stage_working_dir(runtime_env: dict[str, Any], plan: LaunchPlan) -> str | None:
    """A local working_dir plus the plan's files, so a command run in Ray's copy finds them by relative path."""
    source = Path(runtime_env["working_dir"])
    if not source.is_dir() or not plan.files:
        return None  # a remote URI (s3://, gs://, https://) or nothing to add: Ray takes it as given
    staging = tempfile.mkdtemp(prefix="benchbed-ray-")
    shutil.copytree(source, staging, dirs_exist_ok=True)
    write_plan_files(plan, Path(staging))
    runtime_env["working_dir"] = staging
    return staging


def _client(address: str) -> Any:
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as exc:
        raise LaunchError(f"--launcher ray needs the Ray Job SDK: pip install 'benchbed[ray]' ({exc})") from None
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # ConnectionError, ValueError for a malformed address
        raise LaunchError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _ray_version(address: str) -> str:
    """The cluster's Ray version from the dashboard's /api/version (the SDK's own version if unreachable)."""
    import ray

    url = address if "://" in address else f"http://{address}"
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/api/version", timeout=5) as response:
            return str(json.load(response).get("ray_version") or ray.__version__)
    except (OSError, ValueError):
        return ray.__version__


def _driver_node(details: Any) -> list[str]:
    """The node the entrypoint ran on: the driver's IP, else the host of the agent that started it."""
    driver = getattr(details, "driver_info", None)
    if driver is not None and getattr(driver, "node_ip_address", None):
        return [driver.node_ip_address]
    agent = getattr(details, "driver_agent_http_address", None)
    host = urllib.parse.urlparse(agent).hostname if agent else None
    return [host] if host else []


def _wait(client: Any, job_id: str, timeout_s: float | None, start: float) -> Any:
    """Poll until the job is terminal (its status) or the timeout passes (None)."""
    while True:
        status = client.get_job_status(job_id)
        if status.is_terminal():
            return status
        if timeout_s is not None and time.monotonic() - start >= timeout_s:
            return None
        time.sleep(POLL_S)


def _stop(client: Any, job_id: str) -> list[str]:
    """Stop the job and wait for Ray to confirm; a job that will not stop is a warning, never silence."""
    try:
        client.stop_job(job_id)
    except Exception as exc:  # already terminal, or the head went away
        return [f"could not stop Ray job {job_id}: {exc}"]
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if client.get_job_status(job_id).is_terminal():
            return []
        time.sleep(POLL_S)
    return [f"Ray job {job_id} was asked to stop but is still running after {STOP_WAIT_S:.0f}s"]


class _LogTail:
    """Streams the job's log into logs/stdout.log while it runs; at the end the file is made whole from Ray."""

    def __init__(self, client: Any, job_id: str, path: Path, on_line: OnLine | None, secrets: list[str]) -> None:
        self.client, self.job_id, self.path, self.on_line, self.secrets = client, job_id, path, on_line, secrets
        self.written = 0
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.lock = threading.Lock()

    def start(self) -> None:
        self.path.write_bytes(b"")
        self.thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._tail())
        except Exception:  # the stream is a convenience; finish() fetches the whole log anyway
            return

    async def _tail(self) -> None:
        buffer = ""
        with self.path.open("ab") as sink:
            async for chunk in self.client.tail_job_logs(self.job_id):
                buffer += chunk
                *lines, buffer = buffer.split("\n")
                for line in lines:
                    self._write(sink, line + "\n")
            if buffer:
                self._write(sink, buffer)

    def _write(self, sink: IO[bytes], text: str) -> None:
        with self.lock:
            if self.closed:
                return
            data = redact(text, self.secrets).encode()
            sink.write(data)
            sink.flush()
            self.written += len(text)
        if self.on_line is not None and text.strip():
            self.on_line(text.rstrip("\n"))

    def finish(self) -> None:
        self.thread.join(timeout=LOG_JOIN_S)
        try:
            full = self.client.get_job_logs(self.job_id)
        except Exception:
            return
        with self.lock:
            self.closed = True
            if len(full) > self.written or self.thread.is_alive():
                self.path.write_bytes(redact(full, self.secrets).encode())
                self.written = len(full)
