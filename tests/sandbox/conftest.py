"""Fixtures for sandbox tests: a local backend when bubblewrap can run here, and leak checks after each test."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.sandbox.cgroups import PARENT
from benchbed.sandbox.local import UID_BASE


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _another_workers(pid: int) -> bool:
    """Whether the process descends from another pytest-xdist worker (a sibling of this one under the controller):
    its test is still running there, so it is not one this test left behind."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return False
    me, controller = os.getpid(), os.getppid()
    try:
        while pid > 1 and pid != me:
            parent = _parent(pid)
            if parent == controller:
                return True
            pid = parent
    except (OSError, ValueError, IndexError):
        return False
    return False


def sandbox_uid_pids() -> list[str]:
    """Host processes running as a sandbox uid, as "pid:state:name" (zombies included, to see them), but for those
    under another xdist worker's tree (its test is still running) and zombies init has adopted: a stopped sandbox's
    processes die with its PID namespace and are reparented to PID 1 until it reaps them, whichever worker's sandbox
    it was, so such a zombie is dead, unowned and about to go, not a process a test left running."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if not UID_BASE <= uid < UID_BASE + 100_000_000:
            continue
        if fields.get("State", "").split()[:1] == ["Z"] and fields.get("PPid", "").strip() == "1":
            continue
        if not _another_workers(int(status.parent.name)):
            found.append(f"{status.parent.name}:{fields['State'].split()[0]}:{fields['Name'].strip()}")
    return found


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
    yield
    assert settled(sandbox_uid_pids) == [], "sandbox processes left running"
    assert own_cgroups() == [], "sandbox cgroups left behind"
    assert benchbed_mounts() == [], "sandbox mounts left behind"
