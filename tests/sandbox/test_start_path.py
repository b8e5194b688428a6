"""The local start path: the sandbox's processes are in its own cgroups (joined without migration), cgroups made
ahead by a close serve the next start with that start's limits, and nothing made ahead outlives the backend."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool

pytestmark = pytest.mark.usefixtures("no_leaks")


def host_cgroups(pid: int) -> dict[str, str]:
    """Controller (or "" for v2) -> cgroup path of a host process, from /proc/PID/cgroup."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for ctrl in controllers.split(",") if controllers else [""]:
            out[ctrl] = path
    return out


def limit_files(backend: LocalBackend, name: str) -> dict[str, str]:
    """memory and pids caps as written in a sandbox's cgroups (v1 or v2 layout)."""
    out = {}
    for ctrl, (ver, mount) in backend.caps.cgroups.limits.items():
        d = mount / "benchbed" / name
        if ctrl == "memory":
            out["memory"] = (d / ("memory.limit_in_bytes" if ver == "v1" else "memory.max")).read_text().strip()
        elif ctrl == "pids":
            out["pids"] = (d / "pids.max").read_text().strip()
    return out


def test_processes_join_their_cgroups_and_a_spare_takes_the_next_specs_limits(local_caps):
    if not local_caps.cgroups.limits or local_caps.helper is None:
        pytest.skip("needs cgroup limits and the spawn helper (root, a C compiler)")
    first, second = SandboxSpec(memory_mb=256, pids_max=64), SandboxSpec(memory_mb=128, pids_max=32)

    async def main() -> None:
        backend = LocalBackend(local_caps)
        async with SandboxPool(backend, PoolConfig(max_starting=1), EventSink()) as pool:
            a = await pool.create(first)
            inside = host_cgroups(a.state.sandbox_pid)
            for ctrl, (ver, _) in local_caps.cgroups.limits.items():
                if ver == "v1":
                    assert inside[ctrl] == f"/benchbed/{a.id}", (ctrl, inside)
            if local_caps.cgroups.v2 is not None:
                assert inside[""] == f"/benchbed/{a.id}/x0", inside
            result = await pool.exec(a, ["/bin/echo", "ok"], timeout_s=10)
            assert result.ok and result.stdout == b"ok\n"
            await pool.close(a)

            assert backend.spare is not None  # made while `a` was torn down
            spare = await backend.spare
            assert spare.limits == (256 << 20, 64, 1.0)
            b = await pool.create(second)
            assert b.id == spare.name  # the spare served this start
            assert limit_files(backend, b.id) == {k: v for k, v in {"memory": str(128 << 20), "pids": "32"}.items()
                                                  if k in local_caps.cgroups.limits}  # fmt: skip
            result = await pool.exec(b, ["/bin/sh", "-c", "echo $$"], timeout_s=10)
            assert result.ok, result
            await pool.close(b)
            assert backend.spare is not None
        assert backend.spare is None  # the final sweep waited for it and removed it (no_leaks checks the dirs)

    asyncio.run(main())
