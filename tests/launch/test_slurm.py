"""--launcher slurm against a real one-node Slurm: a simulator run succeeds, a job fails, a timeout cancels,
Ctrl-C cancels, SIGKILL of benchbed cancels through the watchdog, and a framework's own sbatch (prime-rl
multi-node) is followed, recorded as its own and cancelled when benchbed is killed while following it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchbed.adapter import LaunchPlan
from benchbed.launch.local import LocalLauncher
from benchbed.launch.sbatch import SCRIPT_NAME
from benchbed.pipeline import execute
from benchbed.spec import build_spec
from benchbed.store import Store, read_record

from .procs import processes_in

pytestmark = pytest.mark.slow  # real processes and schedulers: left out by make test-fast

REPO = Path(__file__).resolve().parents[2]


def sim_spec(steps: int, **slurm: object):
    return build_spec(
        {
            "name": "slurm-sim",
            "adapter": "sim",
            "workload": {"steps": steps, "prompts_per_step": 2, "group_size": 4},
            "sim": {"concurrency": 8, "latency": {"dist": "lognormal", "mean": 2.0, "cv": 0.3}, "train_step_time": 1.0},
            "slurm": {"nodes": 1, "gpus_per_node": 0, "job_name": "bb-test", **slurm},
        }
    )


def squeue_ids() -> list[str]:
    return subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, timeout=30).stdout.split()


def wait_for_job_process(store: Path, timeout_s: float = 60) -> Path:
    """The run directory once the job's command runs in it (so the interrupt hits a running job)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run_dir in store.glob("*/sim/*/*"):
            if processes_in(run_dir):
                return run_dir
        time.sleep(0.2)
    raise AssertionError(f"no job started under {store} within {timeout_s}s")


def test_sim_run_succeeds_as_an_sbatch_job(slurm_cluster, tmp_path):
    lines: list[str] = []
    outcome = execute(sim_spec(30), Store(tmp_path), on_line=lines.append, launcher="slurm")
    record = outcome.record
    assert record.status == "succeeded", record.error
    assert record.launcher == "slurm"
    assert record.launch.scheduler == "slurm" and record.launch.submitted_by == "benchbed"
    assert record.launch.job_id.isdigit() and record.launch.state == "COMPLETED"
    assert record.launch.nodes == [slurm_cluster.host]
    assert record.launch.address == "benchbed-test" and record.launch.version.startswith(("2", "1"))
    assert record.metrics["trainer_throughput_sps"].value > 0
    script = (outcome.run_dir / SCRIPT_NAME).read_text()
    assert "#SBATCH --job-name=bb-test" in script and "#SBATCH --nodes=1" in script
    assert "gpus-per-node" not in script
    assert any(line.startswith("progress ") for line in lines)  # the job's stderr reached the progress callback
    assert "progress 30/30" in (outcome.run_dir / "logs" / "stderr.log").read_text()
    assert record.launch.job_id not in squeue_ids() or record.launch.state == "COMPLETED"


def test_failing_job_keeps_a_failed_record_with_slurms_state(slurm_cluster, tmp_path):
    # No pyxis on this cluster: srun rejects --container-image and the batch script exits non-zero.
    outcome = execute(sim_spec(5, container_image="nvcr.io#nvidia/pytorch:24.01-py3"), Store(tmp_path),
                      launcher="slurm")  # fmt: skip
    record = read_record(outcome.run_dir)
    assert record.status == "failed"
    assert record.launch.state == "FAILED" and record.launch.job_id
    assert f"Slurm job {record.launch.job_id} ended FAILED" in record.error.message
    assert record.error.exit_code not in (0, None)
    assert "container-image" in record.error.log_tail


def test_timeout_cancels_the_job_and_leaves_nothing_running(slurm_cluster, tmp_path):
    outcome = execute(sim_spec(500_000), Store(tmp_path), launcher="slurm", timeout_s=4)
    record = read_record(outcome.run_dir)
    assert record.status == "failed" and "timed out" in record.error.message
    assert record.launch.state == "CANCELLED"
    assert record.launch.job_id not in squeue_ids()
    assert processes_in(outcome.run_dir) == []


def test_ctrl_c_cancels_the_job_and_keeps_a_failed_record(slurm_cluster, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        textwrap.dedent(
            """
            name = "slurm-ctrl-c"
            adapter = "sim"
            [workload]
            steps = 100000
            [slurm]
            nodes = 1
            gpus_per_node = 0
            """
        )
    )
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchbed", "run", str(spec), "--launcher", "slurm", "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    run_dir = wait_for_job_process(store)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=90)
    assert proc.returncode != 0
    record = read_record(run_dir)
    assert record.status == "failed" and "interrupted" in record.error.message
    assert record.launch.state == "CANCELLED" and record.launch.job_id not in squeue_ids()
    assert processes_in(run_dir) == []


def test_a_framework_that_runs_sbatch_itself_is_followed_and_recorded(slurm_cluster, tmp_path):
    # What prime-rl's `rl` does for a multi-node deployment: write a batch script, `sbatch` it, exit.
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\nsleep 1\necho framework job done > " + str(tmp_path / "done.txt") + "\n")
    plan = LaunchPlan(argv=["sbatch", f"--output={tmp_path}/job.out", str(job)], submits_job="slurm")
    spec = build_spec({"name": "prime-multi-node", "adapter": "prime_rl"})
    result = LocalLauncher().launch(spec, plan, tmp_path / "run")
    assert result.ok, (result.failure, result.log_tail())
    assert result.info.submitted_by == "prime_rl" and result.info.job_id.isdigit()
    assert result.info.state == "COMPLETED" and result.info.nodes == [slurm_cluster.host]
    assert (tmp_path / "done.txt").read_text() == "framework job done\n"  # benchbed waited for the job to end


def test_sigkill_of_benchbed_cancels_the_job(slurm_cluster, tmp_path):
    """benchbed killed outright (SIGKILL, the OOM killer) cannot scancel; its watchdog does."""
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "slurm-sigkill"\nadapter = "sim"\n[workload]\nsteps = 100000\n'
                    "[slurm]\nnodes = 1\ngpus_per_node = 0\n")  # fmt: skip
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchbed", "run", str(spec), "--launcher", "slurm", "--store", str(store)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    run_dir = wait_for_job_process(store)
    assert squeue_ids(), "the job is queued"
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (squeue_ids() or processes_in(run_dir)):
        time.sleep(0.5)
    assert squeue_ids() == [] and processes_in(run_dir) == []


FOLLOW_FRAMEWORK_JOB = """
import sys
from pathlib import Path
from benchbed.adapter import LaunchPlan
from benchbed.launch.local import LocalLauncher
from benchbed.spec import build_spec
job, out, run = sys.argv[1:4]
plan = LaunchPlan(argv=["sbatch", f"--output={out}", job], submits_job="slurm")
LocalLauncher().launch(build_spec({"name": "prime-multi-node", "adapter": "prime_rl"}), plan, Path(run))
"""


def test_sigkill_while_following_a_frameworks_own_job_cancels_it(slurm_cluster, tmp_path):
    """The framework's `sbatch` has exited; benchbed follows the job it submitted. Killed outright then, benchbed's
    watchdog cancels that job too (it ran on, unwatched, before)."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\nsleep 600\n")
    before = set(squeue_ids())
    proc = subprocess.Popen(
        [sys.executable, "-c", FOLLOW_FRAMEWORK_JOB, str(job), str(tmp_path / "job.out"), str(tmp_path / "run")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        submitted: list[str] = []
        while not submitted and time.monotonic() < deadline:
            submitted = [j for j in squeue_ids() if j not in before]
            time.sleep(0.3)
        assert submitted, "the framework's job was never queued"
        stdout = tmp_path / "run" / "logs" / "stdout.log"
        while "Submitted batch job" not in stdout.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # sbatch has exited: benchbed now follows the job
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and submitted[0] in squeue_ids():
        time.sleep(0.5)
    assert submitted[0] not in squeue_ids()
