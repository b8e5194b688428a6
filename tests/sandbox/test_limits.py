"""Every limit that stops a hostile program is named in the result, a thread bomb included."""

from __future__ import annotations

import asyncio

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool

pytestmark = pytest.mark.usefixtures("no_leaks")

THREAD_BOMB = (
    "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
)


async def _run(local_caps, spec: SandboxSpec, argv: list[str]):
    async with SandboxPool(LocalBackend(local_caps), PoolConfig(max_starting=1), EventSink()) as pool:
        outcome = await pool.run(spec, argv, timeout_s=20)
    assert outcome.result is not None, outcome
    return outcome.result


@pytest.mark.parametrize(("pids_max", "limit"), [(32, "pids"), (4096, "address_space")])
def test_a_thread_bomb_names_the_limit_that_stopped_it(local_caps, pids_max, limit):
    spec = SandboxSpec(memory_mb=256, pids_max=pids_max)
    result = asyncio.run(_run(local_caps, spec, ["/usr/bin/python3", "-c", THREAD_BOMB]))
    assert result.exit_code == 1 and b"can't start new thread" in result.stderr
    assert result.limit == limit, result
    assert ("process cap 32 reached" if limit == "pids" else "RLIMIT_AS, 1536 MiB") in result.message
