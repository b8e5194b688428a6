"""pid_alive: the one liveness check the cgroup, Modal and Prime sweeps use to find leftovers of dead runs."""

from __future__ import annotations

import os
import subprocess

from benchbed.sandbox.procs import pid_alive


def test_running_processes_are_alive() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(1)  # init: alive whether or not we may signal it


def test_a_reaped_child_is_not_alive() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert not pid_alive(child.pid)
