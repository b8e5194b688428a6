"""Turning a rendered plan into a Ray job: slime's `ray job submit … -- python3 train.py …` is unwrapped,
verl's plain command is taken as is, and the entrypoint checks the run directory before it runs anything."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchbed.errors import LaunchError
from benchbed.launch.ray_submission import UNREACHABLE_EXIT, entrypoint, unwrap, with_env
from benchbed.pipeline import render
from benchbed.spec import load_spec

REPO = Path(__file__).resolve().parents[2]


def test_slime_plan_is_unwrapped_to_its_train_command(tmp_path):
    spec = load_spec(REPO / "experiments" / "slime-case-study-4.toml")
    _, plan = render(spec, tmp_path)
    sub = unwrap(plan.argv, tmp_path)
    separator = plan.argv.index("--")
    assert sub.argv == plan.argv[separator + 1 :]
    assert sub.argv[0] == "python3" and sub.argv[1].endswith(("train.py", "train_async.py"))
    submitted_env = json.loads(plan.argv[plan.argv.index("--runtime-env-json") + 1])
    assert sub.runtime_env == submitted_env
    assert sub.address == plan.argv[plan.argv.index("--address") + 1]


def test_verl_plan_is_submitted_as_is_with_its_environment(tmp_path):
    spec = load_spec(REPO / "experiments" / "verl-case-study-3.toml")
    _, plan = render(spec, tmp_path)
    sub = unwrap(plan.argv, tmp_path)
    assert sub.argv == plan.argv and sub.argv[1] == "-m" and sub.argv[2].startswith("verl.")
    runtime_env = with_env(sub.runtime_env, plan.env)
    assert runtime_env["env_vars"]["VERL_FILE_LOGGER_PATH"] == plan.env["VERL_FILE_LOGGER_PATH"]


def test_unwrap_reads_every_option_form(tmp_path):
    (tmp_path / "env.yaml").write_text("env_vars:\n  A: from-yaml\n  B: from-yaml\npip: [rich]\n")
    argv = [
        "/usr/bin/ray", "job", "submit", "--address=http://head:8265", "--runtime-env", "env.yaml",
        "--runtime-env-json", '{"env_vars": {"B": "from-json"}}', "--working-dir", "/code", "--no-wait",
        "--entrypoint-num-cpus", "1", "--entrypoint-num-gpus=0.5", "--entrypoint-memory", "1000",
        "--entrypoint-resources", '{"head": 1}', "--submission-id", "nightly-1", "--metadata-json", '{"k": 2}',
        "--", "python3", "train.py", "--x", "1",
    ]  # fmt: skip
    sub = unwrap(argv, tmp_path)
    assert sub.argv == ["python3", "train.py", "--x", "1"]
    assert sub.address == "http://head:8265"
    env_vars = {"A": "from-yaml", "B": "from-json"}
    assert sub.runtime_env == {"env_vars": env_vars, "pip": ["rich"], "working_dir": "/code"}
    assert (sub.entrypoint_num_cpus, sub.entrypoint_num_gpus, sub.entrypoint_memory) == (1.0, 0.5, 1000)
    assert sub.entrypoint_resources == {"head": 1.0} and sub.submission_id == "nightly-1"
    assert sub.metadata == {"k": "2"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ray", "job", "submit", "--bogus", "1", "--", "x"], "--bogus"),
        (["ray", "job", "submit", "--address"], "needs a value"),
        (["ray", "job", "submit", "--address", "a", "--"], "without a command"),
        (["ray", "job", "submit", "--runtime-env-json", "{nope", "--", "x"], "not valid JSON"),
    ],
)
def test_unwrap_refuses_what_it_cannot_honour(argv, message, tmp_path):
    with pytest.raises(LaunchError, match=message):
        unwrap(argv, tmp_path)


def test_entrypoint_runs_in_the_run_directory_and_records_captures(tmp_path):
    line = entrypoint(["sh", "-c", "pwd; echo $0"], tmp_path, str(tmp_path), {"env.txt": ["echo", "captured"]})
    out = subprocess.run(line, shell=True, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == str(tmp_path)
    assert (tmp_path / "env.txt").read_text() == "captured\n"


def test_entrypoint_says_when_the_run_directory_is_not_visible(tmp_path):
    line = entrypoint(["true"], tmp_path / "absent", None, {})
    out = subprocess.run(line, shell=True, capture_output=True, text=True)
    assert out.returncode == UNREACHABLE_EXIT
    assert "not visible" in out.stderr and "--store on a filesystem both sides see" in out.stderr
