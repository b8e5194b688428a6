"""The local launcher: logs streamed into logs/, exit codes, timeouts that kill the whole process group."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time

import pytest

from benchbed.adapter import LaunchPlan
from benchbed.errors import LaunchError
from benchbed.launch.local import run_plan


def python(code: str, **kw) -> LaunchPlan:
    return LaunchPlan(argv=[sys.executable, "-c", textwrap.dedent(code)], **kw)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_streams_logs_writes_files_and_records_exit_code(tmp_path):
    lines: list[str] = []
    plan = python(
        """
        import sys, pathlib
        print("hello out"); print("progress 1/2", file=sys.stderr)
        print(pathlib.Path("cfg/run.toml").read_text(), end="")
        sys.exit(3)
        """,
        files={"cfg/run.toml": "x = 1\n"},
    )
    result = run_plan(plan, tmp_path, on_line=lines.append)
    assert result.exit_code == 3 and not result.ok and not result.timed_out
    assert (tmp_path / "logs" / "stdout.log").read_text() == "hello out\nx = 1\n"
    assert lines == ["progress 1/2"]
    assert "progress 1/2" in result.log_tail()


def test_timeout_kills_the_whole_process_group(tmp_path):
    plan = python(
        """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print(child.pid, flush=True)
        time.sleep(120)
        """
    )
    start = time.monotonic()
    result = run_plan(plan, tmp_path, timeout_s=1.5)
    assert result.timed_out and result.exit_code == -signal.SIGTERM
    assert time.monotonic() - start < 60  # stopped at the timeout, long before the plan's 120 s sleep ends
    grandchild = int((tmp_path / "logs" / "stdout.log").read_text().split()[0])
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_child_ignoring_sigterm_is_killed(tmp_path):
    plan = python(
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(120)
        """
    )
    import benchbed.launch.local as local

    original = local.TERMINATE_GRACE_S
    local.TERMINATE_GRACE_S = 0.5
    try:
        result = run_plan(plan, tmp_path, timeout_s=1.0)
    finally:
        local.TERMINATE_GRACE_S = original
    assert result.timed_out and result.exit_code == -signal.SIGKILL


def test_secrets_in_output_are_masked_in_the_log_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "wandb-secret-value-123")
    plan = python("import os; print('key is', os.environ['WANDB_API_KEY'])")
    run_plan(plan, tmp_path)
    text = (tmp_path / "logs" / "stdout.log").read_text()
    assert "wandb-secret-value-123" not in text and "key is ***" in text


def test_missing_executable_is_a_clear_error(tmp_path):
    with pytest.raises(LaunchError, match="cannot start 'no-such-binary-xyz': not found"):
        run_plan(LaunchPlan(argv=["no-such-binary-xyz"]), tmp_path)


def test_missing_framework_environment_names_its_make_target(tmp_path):
    """A spec's Python inside an environment `make` builds (as experiments/trl-vllm-cpu.toml names its own)."""
    python = tmp_path / ".envs" / "trl-vllm" / "bin" / "python"
    with pytest.raises(LaunchError, match=r"not found; build that environment with `make trl-vllm`") as caught:
        run_plan(LaunchPlan(argv=[str(python), "-c", "pass"]), tmp_path / "run")
    assert "on PATH" not in str(caught.value)


def test_plan_files_cannot_escape_the_run_dir(tmp_path):
    with pytest.raises(LaunchError, match="outside the run directory"):
        run_plan(python("pass", files={"../escape.txt": "x"}), tmp_path / "run")


def test_captures_record_the_environment_before_launch(tmp_path):
    plan = python(
        "import pathlib; print(pathlib.Path('env.txt').read_text().strip())",
        captures={"env.txt": [sys.executable, "-c", "print('verl==0.9.1')"], "bad.txt": ["no-such-binary-xyz"]},
    )
    result = run_plan(plan, tmp_path)
    assert result.ok
    assert (tmp_path / "env.txt").read_text() == "verl==0.9.1\n"
    assert (tmp_path / "logs" / "stdout.log").read_text() == "verl==0.9.1\n"  # written before the launch
    assert not (tmp_path / "bad.txt").exists()
    assert any("could not record bad.txt" in w for w in result.warnings)
