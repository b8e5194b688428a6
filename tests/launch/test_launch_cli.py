"""`benchbed run --launcher …` as a user types it: --dry-run shows what a scheduler would get and stores nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "experiments" / "quickstart.toml"


def test_dry_run_with_slurm_prints_the_batch_script(benchbed, tmp_path):
    out = benchbed("run", QUICKSTART, "--launcher", "slurm", "--dry-run", "--store", tmp_path,
                   "--set", "slurm.partition=h200", "--set", "slurm.nodes=1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "#SBATCH --partition=h200" in out.stdout and "#SBATCH --nodes=1" in out.stdout
    assert "exec " in out.stdout and "benchbed.sim" in out.stdout
    assert not any(tmp_path.rglob("record.json"))


def test_dry_run_with_ray_prints_the_job_request_with_secrets_masked(benchbed, tmp_path):
    out = benchbed("run", QUICKSTART, "--launcher", "ray", "--ray-address", "http://head:8265", "--dry-run",
                   "--store", tmp_path, "--set", 'ray.env={MY_API_KEY="sk-abcdefgh123", MODE="x"}')  # fmt: skip
    assert out.returncode == 2 and "MY_API_KEY" in out.stderr and "Ray cluster's environment" in out.stderr
    assert "sk-abcdefgh123" not in out.stdout + out.stderr and not any(tmp_path.rglob("*"))
    out = benchbed("run", QUICKSTART, "--launcher", "ray", "--dry-run", "--store", tmp_path,
                   "--set", "ray.entrypoint_num_cpus=1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    request = json.loads(out.stdout.split("# Ray job (submit_job arguments): ", 1)[1])
    assert request["entrypoint_num_cpus"] == 1 and "benchbed.sim" in request["entrypoint"]
    assert not any(tmp_path.rglob("record.json"))


def test_ray_options_need_the_ray_launcher(benchbed, tmp_path):
    out = benchbed("run", QUICKSTART, "--ray-address", "http://head:8265", "--store", tmp_path)
    assert out.returncode == 2 and "--launcher ray" in out.stderr
    assert not tmp_path.exists() or not any(tmp_path.rglob("record.json"))


def test_ray_launch_without_a_cluster_address_is_a_usage_error_that_stores_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    for command in (["run", QUICKSTART], ["nightly", REPO / "experiments" / "nightly-cpu.toml"]):
        out = subprocess.run([sys.executable, "-m", "benchbed", *map(str, command), "--launcher", "ray", "--store",
                              str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines() == [
            "benchbed: error: no Ray cluster address: pass --ray-address URL, set RAY_ADDRESS or [ray].address"
        ]
        assert not tmp_path.exists() or not any(tmp_path.rglob("record.json"))
