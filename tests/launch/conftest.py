"""Real schedulers on 127.0.0.1 for the launcher tests, each started once per session and always stopped:
a CPU-only Ray head (`ray start --head --block`) and a one-node Slurm (munged + slurmctld + slurmd)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
SBIN = ("/usr/sbin", "/usr/bin", "/sbin")


def require_environment(python: Path, target: str, what: str) -> None:
    """Skip outside CI when a framework environment `make TARGET` builds is missing; in CI it must be there."""
    if python.exists():
        return
    reason = f"the {what} environment is missing ({python.parents[1]}): run `make {target}`"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the real {what} launches")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_binary(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def group_members(pgid: int) -> list[int]:
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(pid))
    return members


def stop_group(proc: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the daemon we started (it stops its own children), then SIGKILL whatever is left of its group."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (proc.poll() is None or group_members(proc.pid)):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def wait_until(
    check, what: str, procs: list[subprocess.Popen], logs: list[Path], timeout_s: float = READY_TIMEOUT_S
) -> None:
    """Poll `check()` until it is true; fail with the daemons' logs if it is not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        dead = [p.args[0] for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.25)
    tails = "\n".join(f"--- {log}\n{log.read_text(errors='replace')[-2000:]}" for log in logs if log.exists())
    raise RuntimeError(f"{what} not ready within {timeout_s:.0f}s (exited: {dead})\n{tails}")


# ---------------------------------------------------------------- Ray


@dataclass
class RayCluster:
    address: str  # dashboard URL for the Job Submission SDK
    temp_dir: Path


RAY_START_ATTEMPTS = 2  # `ray start` gives the raylet a fixed 30 s to register, which a loaded machine can miss
RAY_START_TIMEOUT_S = 240.0  # seconds on an idle machine; minutes when every core is oversubscribed


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    try:
        import ray.job_submission  # noqa: F401
    except ImportError:
        pytest.skip("Ray is not installed (make setup-test installs the 'ray' extra)")
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        temp_dir = Path(tempfile.mkdtemp(prefix="bbray", dir="/tmp"))  # short: socket paths have a length limit
        address = f"http://127.0.0.1:{free_port()}"
        try:
            pgid = start_ray_head(address, temp_dir)  # stops what it started when it fails
            break
        except RuntimeError:
            shutil.rmtree(temp_dir, ignore_errors=True)
            if attempt == RAY_START_ATTEMPTS:
                raise
    try:
        yield RayCluster(address=address, temp_dir=temp_dir)
    finally:
        stop_ray_jobs(address)
        stop_process_group(pgid)
        shutil.rmtree(temp_dir, ignore_errors=True)


def start_ray_head(address: str, temp_dir: Path, cpus: int = 2, gpus: int = 0) -> int:
    """`ray start --head` on 127.0.0.1 (CPU only unless told of `gpus`, small object store), then wait for a first
    job to finish.

    Returns the process group of the head's daemons. Not --block: that mode tears the head down when any helper
    (e.g. the Ray Client server, which gives up after 30 s on a loaded machine) exits."""
    from ray.job_submission import JobSubmissionClient

    log = temp_dir / "ray-start.log"
    argv = [
        sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--node-ip-address=127.0.0.1",
        f"--port={free_port()}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
        f"--dashboard-port={address.rsplit(':', 1)[1]}", f"--num-cpus={cpus}", f"--num-gpus={gpus}",
        "--object-store-memory=100000000", f"--temp-dir={temp_dir}", "--disable-usage-stats",
        f"--ray-client-server-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
        f"--metrics-export-port={free_port()}",
    ]  # fmt: skip
    # Ray turns a loopback --node-ip-address into the host's interface address unless it believes it is not in a
    # cluster; this variable keeps every Ray daemon on 127.0.0.1, so the tests talk to loopback only.
    # A token in ~/.ray/auth_token (left by any local ray.init(), a verl run's say) turns token authentication on
    # for every later head, and the tests' Job SDK clients, which send none, get 401: the test head runs without.
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_AUTH_MODE": "disabled"}  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        started = proc.wait(timeout=RAY_START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop_process_group(proc.pid)
        raise RuntimeError(f"ray start did not return within {RAY_START_TIMEOUT_S:.0f}s") from None
    if started != 0:
        stop_process_group(proc.pid)
        raise RuntimeError(f"ray start exited {started}:\n{log.read_text(errors='replace')[-3000:]}")
    node_ip = [line for line in log.read_text(errors="replace").splitlines() if "Local node IP" in line]
    if not node_ip or "127.0.0.1" not in node_ip[0]:
        stop_process_group(proc.pid)
        raise RuntimeError(f"the test Ray head must listen on loopback only; ray start said: {node_ip}")
    probe: list[str] = []

    def ready() -> bool:
        """A first job ran: the dashboard, its job agent and the raylet all answer."""
        try:
            client = JobSubmissionClient(address)
            if not probe:
                probe.append(client.submit_job(entrypoint="true"))
            return client.get_job_status(probe[0]).is_terminal()
        except Exception:  # not up yet: connection refused, or "no available agent"
            return False

    try:
        logs = [log, temp_dir / "session_latest/logs/dashboard.log"]
        wait_until(ready, f"Ray head at {address}", [], logs, RAY_START_TIMEOUT_S)  # the first job's agent is slow
    except RuntimeError:
        stop_process_group(proc.pid)
        raise
    return proc.pid


def stop_ray_jobs(address: str) -> None:
    """Jobs run in sessions of their own, outside the head's process group: stop any a failed test left."""
    from ray.job_submission import JobSubmissionClient

    try:
        client = JobSubmissionClient(address)
        for job in client.list_jobs():
            if not job.status.is_terminal():
                client.stop_job(job.submission_id)
    except Exception:
        return
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if all(job.status.is_terminal() for job in client.list_jobs()):
            return
        time.sleep(0.25)


def stop_process_group(pgid: int, grace_s: float = 5.0) -> None:
    """SIGTERM every process of the group, SIGKILL what is left after the grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_members(pgid):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


# ---------------------------------------------------------------- Slurm

SLURM_CONF = """\
ClusterName=benchbed-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
KillWait=2
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def wait_for_no_jobs(env: dict[str, str]) -> None:
    """Give cancelled jobs' steps time to end before slurmd goes (a slurmstepd outlives its slurmd)."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env, timeout=10)
        if out.returncode != 0 or not out.stdout.strip():
            return
        time.sleep(0.25)


@dataclass
class SlurmCluster:
    conf: Path
    host: str


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    binaries = {name: find_binary(name) for name in ("munged", "slurmctld", "slurmd", "sbatch")}
    missing = [name for name, path in binaries.items() if path is None]
    if missing:
        pytest.skip(f"Slurm/munge not installed ({', '.join(missing)}); make setup-test installs slurm-wlm and munge")
    if os.geteuid() != 0:
        pytest.skip("a private slurmd must run as root")
    root = Path(tempfile.mkdtemp(prefix="bbslurm", dir="/tmp"))
    os.chmod(root, 0o700)
    for sub in ("munge", "state", "spool"):
        (root / sub).mkdir(mode=0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(
        SLURM_CONF.format(
            host=host, root=root, ctld_port=free_port(), slurmd_port=free_port(), cpus=os.cpu_count() or 1
        )
    )
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    env = dict(os.environ)
    procs: list[subprocess.Popen] = []
    logs = [root / "munge" / "munged.log", root / "slurmctld.log", root / "slurmd.log"]

    def start(*argv: str) -> None:
        quiet = subprocess.DEVNULL
        procs.append(subprocess.Popen(argv, env=env, stdout=quiet, stderr=quiet, start_new_session=True))

    try:
        start(
            binaries["munged"], "--foreground", "--force", f"--socket={root}/munge/munge.socket",
            f"--key-file={key}", f"--pid-file={root}/munge/munged.pid", f"--log-file={root}/munge/munged.log",
            f"--seed-file={root}/munge/munged.seed",
        )  # fmt: skip
        wait_until(lambda: (root / "munge" / "munge.socket").exists(), "munged", procs, logs)
        start(binaries["slurmctld"], "-D", "-i")
        start(binaries["slurmd"], "-D")

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env, timeout=10)
            return out.returncode == 0 and out.stdout.strip() == "idle"

        wait_until(idle, "Slurm node", procs, logs)
        yield SlurmCluster(conf=conf, host=host)
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, timeout=30)
        wait_for_no_jobs(env)
        for proc in reversed(procs):
            stop_group(proc)
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        shutil.rmtree(root, ignore_errors=True)
