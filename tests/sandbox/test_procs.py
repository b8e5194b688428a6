"""reap_orphans: zombies of sandbox uids are reaped, those another owner will wait for are left."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.local import UID_BASE, LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool
from benchbed.sandbox.procs import reap_orphans


def _wait_zombie(pid: int) -> None:
    for _ in range(500):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return
        time.sleep(0.01)
    raise AssertionError(f"child {pid} did not exit")


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a child under another uid needs root")
def test_sandbox_orphans_are_reaped_behind_a_foreign_zombie() -> None:
    """A zombie child that someone else will wait for (uid 0) stands first; the sandbox-uid zombie behind it is
    reaped all the same, and the foreign one is left to its owner."""
    foreign = subprocess.Popen(["true"])
    _wait_zombie(foreign.pid)
    orphan = subprocess.Popen(["true"], user=UID_BASE + 7, group=UID_BASE + 7)
    _wait_zombie(orphan.pid)
    assert reap_orphans(UID_BASE, UID_BASE + 100_000_000) == 1
    assert not Path(f"/proc/{orphan.pid}").exists()
    assert Path(f"/proc/{foreign.pid}").exists()  # still ours to wait for
    assert foreign.wait() == 0


def test_a_backend_adopts_orphans_from_its_first_create_until_its_shutdown(local_caps, no_leaks, is_child_subreaper):
    """Made and never used, a local backend leaves this process as it was; its first create makes the process
    the subreaper that reaps a killed sandbox's processes, and shutdown gives that up again."""
    backend = LocalBackend(local_caps)
    assert not is_child_subreaper()

    async def run_one() -> tuple[int | None, bool]:
        async with SandboxPool(backend, PoolConfig()) as pool:
            run = await pool.run(SandboxSpec(), ["/bin/true"], timeout_s=10)
            return run.result.exit_code, is_child_subreaper()

    assert asyncio.run(run_one()) == (0, True)
    assert not is_child_subreaper()
