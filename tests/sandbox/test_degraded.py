"""The local backend without cgroups or the private tmpfs (what a host without them gets): it still contains
runaway programs through rlimits and pid-namespace teardown, and says what it lost."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.cgroups import CgroupLayout
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture
def degraded(local_caps):
    caps = dataclasses.replace(
        local_caps, cgroups=CgroupLayout(v2=None, limits={}, kill=False, swap_accounting=False),
        private_tmpfs=False, helper=None,
        warnings=["no usable cgroup memory controller (test)", "no inode cap (test)"],
    )  # fmt: skip
    return caps


def test_degraded_backend_contains_and_warns(degraded):
    daemon = "(trap '' TERM; setsid sh -c \"trap '' TERM; while :; do sleep 1; done\" &) ; echo started"

    async def main():
        async with SandboxPool(LocalBackend(degraded), PoolConfig()) as pool:
            spin = await pool.run(SandboxSpec(), ["/usr/bin/python3", "-c", "while True: pass"], timeout_s=1)
            left = await pool.run(SandboxSpec(), ["/bin/sh", "-c", daemon], timeout_s=5)
            df = await pool.run(SandboxSpec(disk_mb=8), ["/bin/sh", "-c", "df -k /tmp | tail -1"], timeout_s=5)
            return spin, left, df

    spin, left, df = asyncio.run(main())
    assert spin.result.reason == "exec_timeout"
    assert left.result.ok and left.result.stdout == b"started\n"
    assert df.result.stdout.split()[1] == b"8192"  # bwrap's size-capped tmpfs
    assert "no inode cap (test)" in spin.warnings


def test_shell_chains_without_the_helper_contain_the_same(local_caps):
    """Full limits through sh/unshare/mount/nsenter when no C compiler built the helper."""
    caps = dataclasses.replace(local_caps, helper=None)
    hog = "a = []\nwhile True:\n    a.append(bytearray(1 << 20))\n"
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"

    async def main():
        async with SandboxPool(LocalBackend(caps), PoolConfig()) as pool:
            spec = SandboxSpec(memory_mb=128, pids_max=64, max_files=100)
            oom = await pool.run(spec, ["/usr/bin/python3", "-c", hog], timeout_s=20)
            forks = await pool.run(spec, ["/usr/bin/python3", "-c", bomb], timeout_s=2)
            files = await pool.run(spec, ["/bin/sh", "-c", "for i in $(seq 200); do : > f$i || exit 9; done"])
            return oom, forks, files

    oom, forks, files = asyncio.run(main())
    assert oom.result.reason == "oom"
    assert "process cap 64 reached" in forks.result.message
    assert files.result.limit == "disk" and b"cannot create f100" in files.result.stderr  # 100 inodes, 1 is the dir
