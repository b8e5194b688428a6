"""pid_alive and group_alive: the one liveness check the catalog's write claims, the watchdog and the sandbox
sweeps use to tell a live owner from a dead one."""

from __future__ import annotations

import os
import subprocess
import time

from benchbed.liveness import group_alive, pid_alive


def test_running_processes_are_alive() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(1)  # init: alive whether or not we may signal it


def test_a_reaped_child_is_not_alive() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert not pid_alive(child.pid)


def test_an_exited_child_nobody_has_reaped_is_not_alive() -> None:
    """A zombie: what a sandbox owner becomes when benchbed is killed and a subreaper that never waits adopts it;
    the sweeps must take its cgroups."""
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 30
    while _state(child.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(child.pid) == "Z"
    assert not pid_alive(child.pid)
    child.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_pid_zero_or_below_names_a_group_and_is_never_a_live_process() -> None:
    assert not pid_alive(0) and not pid_alive(-os.getpgrp())


def test_a_group_is_alive_while_a_member_runs() -> None:
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert group_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not group_alive(child.pid)
    assert not group_alive(0)
