"""Local sandbox start (pool.create: request -> ready, sequential) against a bare `bwrap … /usr/bin/true` with the
same namespaces, measured in the same run (target: p50 at most 1.5x), and the pool's own overhead per sandbox
against a backend that does nothing (reported, in microseconds).

Both sides are a few process spawns, so their time follows the machine's load from one second to the next. The
ratio's baseline is therefore taken round by round: each timed start is preceded by one timed bare bwrap (in the
round's untimed set-up), and the ratio divides the two medians of those interleaved samples. The bare benchmark
of its own is kept for pytest-benchmark's saved results."""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ratios import median_of, ratio

from benchbed.sandbox.base import ExecResult, Handle, SandboxSpec
from benchbed.sandbox.events import EventSink
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool

WARMUP = 5

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (make test has it)")


@pytest.fixture(scope="module")
def rounds(quick: bool) -> int:
    return 30 if quick else 200


def bare_bwrap_argv() -> list[str]:
    """The smallest bwrap that runs a program with the namespaces the local backend unshares."""
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--proc", "/proc", "--dev", "/dev"]  # fmt: skip
    if Path("/usr/lib64").exists():
        argv += ["--symlink", "usr/lib64", "/lib64"]
    return [*argv, "/usr/bin/true"]


def test_bare_bwrap_true(benchmark, rounds: int) -> None:
    argv = bare_bwrap_argv()
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs={"check": True}, rounds=rounds, iterations=1,
                                warmup_rounds=WARMUP)  # fmt: skip
    assert result.returncode == 0


@pytest.fixture(scope="module")
def pool_loop() -> Iterator[tuple[asyncio.AbstractEventLoop, SandboxPool]]:
    loop = asyncio.new_event_loop()
    pool = SandboxPool(LocalBackend(), PoolConfig(max_starting=1), EventSink())
    loop.run_until_complete(pool.__aenter__())
    yield loop, pool
    loop.run_until_complete(pool.__aexit__(None, None, None))
    loop.close()


def test_local_sandbox_start(benchmark, rounds: int, pool_loop) -> None:
    loop, pool = pool_loop
    spec = SandboxSpec()
    live: list[Handle] = []
    bare = bare_bwrap_argv()
    bare_s: list[float] = []

    def before_each_round() -> tuple[tuple, dict]:
        """Close the previous sandbox (untimed), then time one bare bwrap: the baseline sample of this round."""
        while live:
            loop.run_until_complete(pool.close(live.pop()))
        t0 = time.perf_counter()
        subprocess.run(bare, check=True)
        bare_s.append(time.perf_counter() - t0)
        return (), {}

    def start() -> Handle:
        handle = loop.run_until_complete(pool.create(spec))
        live.append(handle)
        return handle

    handle = benchmark.pedantic(start, setup=before_each_round, rounds=rounds, iterations=1, warmup_rounds=WARMUP)
    while live:
        loop.run_until_complete(pool.close(live.pop()))
    assert handle.closed
    baseline = statistics.median(bare_s[WARMUP:])  # the set-up also runs before each warm-up round
    benchmark.extra_info["bare_bwrap_median_s"] = baseline
    ratio("local sandbox start (p50)", median_of(benchmark), "bare bwrap … true (interleaved)", baseline, 1.5)


class NullBackend:
    """Creates, runs and closes nothing: what is left of a pool round trip is the pool's own cost."""

    name = "null"
    retryable = frozenset()

    async def create(self, spec, *, key, deadline_s, on_step):  # type: ignore[no-untyped-def]
        on_step("create_sent")
        on_step("started")
        return Handle(id=key, backend=self.name, key=key)

    async def exec(self, handle, argv, *, timeout_s, env=None):  # type: ignore[no-untyped-def]
        return ExecResult(exit_code=0)

    async def close(self, handle):  # type: ignore[no-untyped-def]
        handle.closed = True

    async def sweep(self, *, final=False):  # type: ignore[no-untyped-def]
        return 0

    async def shutdown(self) -> None:
        return None


def test_pool_overhead(benchmark) -> None:
    """1,000 create+exec+close round trips through the pool with a backend that does nothing."""
    n = 1_000

    async def round_trips() -> float:
        async with SandboxPool(NullBackend(), PoolConfig(max_starting=16), EventSink()) as pool:
            t0 = time.perf_counter()
            await asyncio.gather(*(pool.run(SandboxSpec(), ["x"]) for _ in range(n)))
            return time.perf_counter() - t0

    seconds = benchmark.pedantic(lambda: asyncio.run(round_trips()), rounds=5, iterations=1)
    benchmark.extra_info["overhead_us_per_sandbox"] = round(seconds / n * 1e6, 1)
    assert seconds / n < 1e-3  # the pool must stay far below a real start (~10 ms)
