"""Fixtures for sandbox tests: a local backend when bubblewrap can run here, and leak checks after each test."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.sandbox.cgroups import PARENT
from benchbed.sandbox.local import UID_BASE


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name: [0] state, [1] parent pid, [19] start time (ticks)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _another_workers(pid: int) -> bool:
    """Whether the process descends from another pytest-xdist worker (a sibling of this one under the controller):
    its test is still running there, so it is not one this test left behind."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return False
    me, controller = os.getpid(), os.getppid()
    try:
        while pid > 1 and pid != me:
            parent = int(_stat(pid)[1])
            if parent == controller:
                return True
            pid = parent
    except (OSError, ValueError, IndexError):
        return False
    return False


def _creator(pid: int) -> int | None:
    """The pid of the process whose backend made the sandbox `pid` runs in, from its cgroup's name
    (`benchbed/<creator pid>-<seq>`), or None when it is in no sandbox cgroup."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)[-1].strip("/").split("/")
        if len(parts) >= 2 and parts[0] == PARENT and parts[1].split("-", 1)[0].isdigit():
            return int(parts[1].split("-", 1)[0])
    return None


def sandbox_uid_pids(since_ticks: int = 0) -> list[str]:
    """Host processes running as a sandbox uid, as "pid:state:name ppid=.. creator=.." (zombies included, to see
    them), but for another xdist worker's (its test is still running): those under its tree and those whose sandbox
    its tree made (a ref engine's sandbox lives below a launch that runs in a session of its own). A process outside
    this worker's tree that started before `since_ticks` (the test's start) is not this test's either, and zombies
    init has adopted are dead and about to go: a stopped sandbox's processes die with its PID namespace and are
    reparented to PID 1 until it reaps them."""
    found = []
    me = os.getpid()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            pid = int(status.parent.name)
            stat = _stat(pid)
        except (OSError, ValueError, IndexError):
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if not UID_BASE <= uid < UID_BASE + 100_000_000:
            continue
        state, ppid = stat[0], int(stat[1])
        if state == "Z" and ppid == 1:
            continue
        creator = _creator(pid)
        if _another_workers(pid) or (creator not in (None, me) and _another_workers(creator)):
            continue
        if int(stat[19]) < since_ticks and not _descends_from(pid, me):
            continue
        found.append(f"{pid}:{state}:{fields['Name'].strip()} ppid={ppid} creator={creator}")
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    try:
        while pid > 1:
            if pid == ancestor:
                return True
            pid = int(_stat(pid)[1])
    except (OSError, ValueError, IndexError):
        return False
    return False


def _now_ticks() -> int:
    """Now, in the clock ticks since boot that /proc/PID/stat's start time counts."""
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def settled(find: Callable[[], list[str]], within_s: float = 3.0) -> list[str]:
    """What `find` still finds after up to `within_s` seconds: a process another worker's sandbox is stopping at this
    moment (its tree half gone, so not yet attributable) is gone by then; one a test left running is not."""
    deadline = time.monotonic() + within_s
    found = find()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = find()
    return found


def own_cgroups() -> list[Path]:
    """Sandbox cgroups this test process created and did not remove."""
    me = f"{os.getpid()}-"
    out = []
    for mount in Path("/sys/fs/cgroup").iterdir():
        parent = mount / PARENT
        if parent.is_dir():
            out += [d for d in parent.iterdir() if d.is_dir() and d.name.startswith(me)]
    return out


def benchbed_mounts() -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if "benchbed-" in line]


@pytest.fixture(scope="session")
def local_caps():
    from benchbed.sandbox.capabilities import SandboxUnavailable, detect

    try:
        return detect()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"local sandbox unavailable here: {exc}")


@pytest.fixture
def no_leaks(local_caps):
    """Assert that a test leaves no sandbox process, mount or cgroup behind."""
    started = _now_ticks()
    yield
    assert settled(functools.partial(sandbox_uid_pids, started)) == [], "sandbox processes left running"
    assert own_cgroups() == [], "sandbox cgroups left behind"
    assert benchbed_mounts() == [], "sandbox mounts left behind"
