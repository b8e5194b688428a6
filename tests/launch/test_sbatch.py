"""Rendered sbatch scripts against golden files (regenerate with BENCHBED_UPDATE_GOLDEN=1), and what must never
be written into one: secrets."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchbed.adapter import LaunchPlan
from benchbed.errors import SpecError
from benchbed.launch.sbatch import allocation, render_script
from benchbed.launch.slurm_options import SlurmOptions
from benchbed.spec import build_spec

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "sbatch"
RUN_DIR = Path("/shared/results/vm/sim/quickstart-0123abcd/20260101T000000Z-abc123")
SIM_PLAN = LaunchPlan(argv=["/opt/venv/bin/python", "-m", "benchbed.sim", "--spec", "sim-spec.json", "--out", "."])


def check_golden(name: str, text: str) -> None:
    """The script parses as bash, and matches its golden file."""
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    path = GOLDEN / name
    if os.environ.get("BENCHBED_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_defaults_come_from_resources_and_timeout():
    spec = build_spec({"name": "quickstart", "adapter": "sim", "timeout_s": 3600,
                       "resources": {"trainer_gpus": 8, "generator_gpus": 8, "gpus_per_node": 8}})  # fmt: skip
    check_golden("defaults.sbatch", render_script(spec, SIM_PLAN, RUN_DIR))


def test_full_slurm_table_with_container_env_and_captures():
    spec = build_spec(
        {
            "name": "verl case study",
            "adapter": "verl",
            "resources": {"trainer_gpus": 16, "generator_gpus": 0, "colocated": True, "gpus_per_node": 8},
            "slurm": {
                "time_limit": "02:00:00", "partition": "h200", "account": "rl-infra", "qos": "nightly",
                "job_name": "bb-verl", "container_image": "nvcr.io#nvidia/pytorch:24.01-py3",
                "container_mounts": ["/datasets:/datasets:ro"], "env": {"NCCL_DEBUG": "WARN"},
                "sbatch_options": ["--exclusive"],
            },
        }
    )  # fmt: skip
    plan = LaunchPlan(
        argv=["python3", "-m", "verl.trainer.main_ppo", "trainer.nnodes=2", "data.train_files=['a b.parquet']"],
        env={"VERL_FILE_LOGGER_PATH": str(RUN_DIR / "metrics.jsonl"), "HF_TOKEN": "hf_secretvalue123"},
        cwd="/shared/checkouts/verl",
        captures={"pip-freeze.txt": ["python3", "-m", "pip", "freeze"]},
    )
    script = render_script(spec, plan, RUN_DIR)
    check_golden("full.sbatch", script)
    assert "HF_TOKEN" not in script and "hf_secretvalue123" not in script  # travels in sbatch's environment only


def test_allocation_whole_nodes_for_the_gpus():
    spec = build_spec({"name": "x", "adapter": "sim", "resources": {"trainer_gpus": 12, "generator_gpus": 8}})
    assert allocation(spec, SlurmOptions()) == (3, 8)
    assert allocation(spec, SlurmOptions(nodes=1, gpus_per_node=0)) == (1, 0)


def test_secret_in_the_slurm_table_is_refused_without_echoing_it():
    with pytest.raises(SpecError, match="WANDB_API_KEY") as refused:
        build_spec({"name": "x", "adapter": "sim", "slurm": {"env": {"WANDB_API_KEY": "abcdefgh"}}})
    assert "abcdefgh" not in str(refused.value)


def test_slurm_table_is_strict():
    with pytest.raises(SpecError, match="unknown field 'slurm.gpus'"):
        build_spec({"name": "x", "adapter": "sim", "slurm": {"gpus": 8}})
    with pytest.raises(SpecError, match="slurm.time_limit"):
        build_spec({"name": "x", "adapter": "sim", "slurm": {"time_limit": "two hours"}})


def test_slime_ray_job_submit_gets_a_ray_cluster_over_the_allocation():
    spec = build_spec({"name": "slime nightly", "adapter": "slime",
                       "resources": {"trainer_gpus": 8, "generator_gpus": 8, "gpus_per_node": 8}})  # fmt: skip
    plan = LaunchPlan(
        argv=["ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--runtime-env-json",
              '{"env_vars":{"PYTHONPATH":"/root/Megatron-LM"}}', "--", "python3", "/root/slime/train.py",
              "--actor-num-nodes", "1"],
        cwd="/root/slime",
    )  # fmt: skip
    script = render_script(spec, plan, RUN_DIR)
    check_golden("slime-ray-cluster.sbatch", script)
    assert "--dashboard-port=8265" in script  # where the rendered `ray job submit --address` looks


def test_ray_cluster_only_when_needed_or_asked():
    single = build_spec({"name": "x", "adapter": "sim", "slurm": {"nodes": 1, "gpus_per_node": 0}})
    assert "ray start" not in render_script(single, SIM_PLAN, RUN_DIR)
    asked = build_spec({"name": "x", "adapter": "sim", "slurm": {"nodes": 1, "ray_cluster": True}})
    assert "ray start --head" in render_script(asked, SIM_PLAN, RUN_DIR)
    declined = build_spec({"name": "x", "adapter": "sim", "slurm": {"nodes": 4, "ray_cluster": False}})
    assert "ray start" not in render_script(declined, SIM_PLAN, RUN_DIR)


def test_a_value_that_would_break_out_of_its_script_line_is_refused():
    base = {"name": "q", "adapter": "sim", "resources": {"trainer_gpus": 8, "generator_gpus": 8}}
    spec = build_spec({**base, "slurm": {"partition": "h200\ntouch /tmp/pwned"}})
    with pytest.raises(SpecError, match=r"\[slurm\] partition holds a line break; an #SBATCH line cannot"):
        render_script(spec, SIM_PLAN, RUN_DIR)
    spec = build_spec({**base, "slurm": {"sbatch_options": ["--exclusive\nrm -rf ~"]}})
    with pytest.raises(SpecError, match=r"\[slurm\] sbatch_options holds a line break"):
        render_script(spec, SIM_PLAN, RUN_DIR)
    spec = build_spec({**base, "slurm": {"env": {"A;touch /tmp/pwned;B": "1"}}})
    with pytest.raises(SpecError, match=r"environment variable name 'A;touch /tmp/pwned;B' is not one a shell can"):
        render_script(spec, SIM_PLAN, RUN_DIR)
