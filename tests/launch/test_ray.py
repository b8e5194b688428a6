"""--launcher ray against a real CPU-only Ray head: a simulator run succeeds, a slime-style `ray job submit`
command is unwrapped and fails with its exit code, a timeout stops the job, SIGTERM stops it, SIGKILL of benchbed
stops it through the watchdog, and a job whose outputs stay on the cluster's side gives a partial record."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbed.adapter import LaunchPlan
from benchbed.launch.ray import RayLauncher
from benchbed.pipeline import execute
from benchbed.spec import build_spec
from benchbed.store import Store, read_record

from .procs import processes_in

pytestmark = pytest.mark.slow  # real processes and schedulers: left out by make test-fast


def sim_spec(steps: int, **extra: object):
    return build_spec(
        {
            "name": "ray-sim",
            "adapter": "sim",
            "workload": {"steps": steps, "prompts_per_step": 2, "group_size": 4},
            "sim": {"concurrency": 8, "latency": {"dist": "lognormal", "mean": 2.0, "cv": 0.3}, "train_step_time": 1.0},
            "ray": {"entrypoint_num_cpus": 0.5},
            **extra,
        }
    )


def job_status(address: str, job_id: str) -> str:
    from ray.job_submission import JobSubmissionClient

    return str(JobSubmissionClient(address).get_job_status(job_id).value)


LONG_SIM_TOML = (
    'adapter = "sim"\n[workload]\nsteps = 500000\nprompts_per_step = 2\ngroup_size = 4\n'
    '[sim]\nconcurrency = 8\ntrain_step_time = 1.0\n[sim.latency]\ndist = "lognormal"\nmean = 2.0\ncv = 0.3\n'
    "[ray]\nentrypoint_num_cpus = 0.5\n"
)  # the job of sim_spec(500_000): it runs for minutes


def start_run_on_ray(tmp_path: Path, address: str, name: str) -> subprocess.Popen:
    """`benchbed run` of the long simulator job on the Ray head, as a child process storing under tmp_path/store."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "{name}"\n' + LONG_SIM_TOML)
    return subprocess.Popen(
        [sys.executable, "-m", "benchbed", "run", str(spec), "--launcher", "ray", "--ray-address", address,
         "--store", str(tmp_path / "store")],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "benchbed.err").open("wb"),
    )  # fmt: skip


def wait_for_job_processes(store: Path, err_log: Path) -> Path:
    """The run directory once the job's driver works in it (up to 180 s)."""
    deadline = time.monotonic() + 180
    run_dir = None
    while run_dir is None and time.monotonic() < deadline:
        run_dir = next((d for d in store.glob("*/sim/*/*") if processes_in(d)), None)
        time.sleep(0.2)
    assert run_dir is not None, err_log.read_text()[-2000:]
    return run_dir


def test_sim_run_succeeds_as_a_ray_job(ray_cluster, tmp_path):
    import ray

    lines: list[str] = []
    launcher = RayLauncher(address=ray_cluster.address)
    outcome = execute(sim_spec(30), Store(tmp_path), on_line=lines.append, launcher=launcher)
    record = outcome.record
    assert record.status == "succeeded", record.error
    assert record.launcher == "ray"
    assert record.launch.scheduler == "ray" and record.launch.job_id.startswith("raysubmit_")
    assert record.launch.state == "SUCCEEDED" and record.launch.version == ray.__version__
    assert record.launch.address == ray_cluster.address
    assert len(record.launch.nodes) == 1 and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", record.launch.nodes[0])
    assert record.metrics["trainer_throughput_sps"].value > 0
    assert "progress 30/30" in (outcome.run_dir / "logs" / "stdout.log").read_text()
    assert "progress 30/30" in lines  # streamed while the job ran


def test_slime_style_ray_job_submit_is_unwrapped_and_its_failure_recorded(ray_cluster, tmp_path):
    code = "import os, sys; print('flag', os.environ['BB_FLAG']); sys.exit(3)"
    plan = LaunchPlan(argv=[
        "ray", "job", "submit", "--address", "http://127.0.0.1:1", "--runtime-env-json",
        '{"env_vars": {"BB_FLAG": "from-runtime-env"}}', "--entrypoint-num-cpus", "0.5", "--",
        sys.executable, "-c", code,
    ])  # fmt: skip
    result = RayLauncher(address=ray_cluster.address).launch(sim_spec(1), plan, tmp_path)
    assert not result.ok and result.info.state == "FAILED"
    assert result.exit_code == 3
    assert "flag from-runtime-env" in (tmp_path / "logs" / "stdout.log").read_text()
    assert f"Ray job {result.info.job_id} ended FAILED" in result.failure


def test_timeout_stops_the_job_and_keeps_a_failed_record(ray_cluster, tmp_path):
    launcher = RayLauncher(address=ray_cluster.address)
    outcome = execute(sim_spec(500_000), Store(tmp_path), launcher=launcher, timeout_s=5)
    record = read_record(outcome.run_dir)
    assert record.status == "failed" and "timed out" in record.error.message
    assert record.launch.state == "STOPPED"
    assert job_status(ray_cluster.address, record.launch.job_id) == "STOPPED"
    assert processes_in(outcome.run_dir) == []


def test_sigterm_stops_the_job_and_keeps_a_failed_record(ray_cluster, tmp_path):
    """SIGTERM to a benchbed child process once its job runs: it exits 128+15, the job ends STOPPED and the record
    says it was interrupted (the signal goes to the child, never to the test runner)."""
    store = tmp_path / "store"
    proc = start_run_on_ray(tmp_path, ray_cluster.address, "ray-sigterm")
    try:
        run_dir = wait_for_job_processes(store, tmp_path / "benchbed.err")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM, (tmp_path / "benchbed.err").read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert "benchbed: error: interrupted by SIGTERM" in (tmp_path / "benchbed.err").read_text()
    record = read_record(run_dir)
    assert record.status == "failed" and "interrupted by SIGTERM" in record.error.message
    assert job_status(ray_cluster.address, record.launch.job_id) == "STOPPED"
    assert processes_in(run_dir) == []


def test_outputs_left_on_the_cluster_side_make_a_partial_record(ray_cluster, tmp_path):
    # An uploaded working_dir makes the job run in Ray's copy of it: the simulator writes its trace there, where
    # benchbed (reading the run directory) cannot see it. The job succeeds; the record must not.
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    (code_dir / "README").write_text("job code\n")
    launcher = RayLauncher(address=ray_cluster.address, working_dir=str(code_dir))
    outcome = execute(sim_spec(10), Store(tmp_path / "store"), launcher=launcher)
    record = read_record(outcome.run_dir)
    assert record.launch.state == "SUCCEEDED"
    assert record.status == "partial"
    assert "could not be read" in record.error.message and "--store on a filesystem" in record.error.message
    assert "progress 10/10" in (outcome.run_dir / "logs" / "stdout.log").read_text()  # the logs were kept


def test_sigkill_of_benchbed_stops_the_job(ray_cluster, tmp_path):
    """benchbed killed outright (SIGKILL, the OOM killer) cannot stop its Ray job; its watchdog calls Ray's job stop,
    so the job ends STOPPED and its driver (the simulator, working in the run directory) is gone."""
    from ray.job_submission import JobSubmissionClient

    store = tmp_path / "store"
    before = {job.submission_id for job in JobSubmissionClient(ray_cluster.address).list_jobs()}
    proc = start_run_on_ray(tmp_path, ray_cluster.address, "ray-sigkill")
    try:
        run_dir = wait_for_job_processes(store, tmp_path / "benchbed.err")
        client = JobSubmissionClient(ray_cluster.address)
        (job_id,) = [job.submission_id for job in client.list_jobs() if job.submission_id not in before]
        assert job_status(ray_cluster.address, job_id) == "RUNNING"
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (
        job_status(ray_cluster.address, job_id) != "STOPPED" or processes_in(run_dir)
    ):
        time.sleep(0.5)
    assert job_status(ray_cluster.address, job_id) == "STOPPED"
    assert processes_in(run_dir) == []
