"""The local launcher stops the whole process tree it started: descendants that left the launch's process group
and session (`setsid`, a daemonising wrapper) included, found with psutil before any is signalled."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil

from benchbed.adapter import LaunchPlan
from benchbed.launch.local import run_plan

# The leader starts a grandchild in a session of its own (so not in the leader's process group), which ignores
# SIGTERM, then both wait.
SCRIPT = """
import os, signal, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"], start_new_session=True)
open("grandchild.pid", "w").write(f"{grandchild.pid} {os.getsid(grandchild.pid)}")
time.sleep(300)
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_timeout_stops_a_descendant_in_its_own_session(tmp_path: Path) -> None:
    plan = LaunchPlan(argv=[sys.executable, "-c", SCRIPT], timeout_s=60)
    pid_file = tmp_path / "grandchild.pid"
    try:
        result = run_plan(plan, tmp_path, timeout_s=3)
        assert result.timed_out and not result.ok
        grandchild, session = map(int, pid_file.read_text().split())
        assert session == grandchild  # it led a session of its own, outside the launch's process group
        deadline = time.monotonic() + 10
        while not gone(grandchild) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gone(grandchild)
    finally:  # never leave the test's own grandchild behind, even when the launcher missed it
        if pid_file.exists() and not gone(pid := int(pid_file.read_text().split()[0])):
            os.kill(pid, signal.SIGKILL)
