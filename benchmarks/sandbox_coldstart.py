"""Local sandbox cold start, sequential: request -> ready p50/p99 (target p50 <= 15 ms, p99 <= 50 ms), plus the
pool's own overhead per sandbox measured against a backend that does nothing (target < 1 ms).

Usage: .venv/bin/python benchmarks/sandbox_coldstart.py [--n 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np

from benchbed.sandbox.base import ExecResult, Handle, SandboxSpec
from benchbed.sandbox.events import Ev, EventSink
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxPool


class NullBackend:
    """Creates, runs and closes nothing: what is left of a pool round trip is the pool's own cost."""

    name = "null"
    retryable = frozenset()

    async def create(self, spec, *, key, deadline_s, on_step):
        on_step("create_sent")
        on_step("started")
        return Handle(id=key, backend=self.name, key=key)

    async def exec(self, handle, argv, *, timeout_s, env=None):
        return ExecResult(exit_code=0)

    async def close(self, handle):
        handle.closed = True

    async def sweep(self, *, final=False):
        return 0

    async def shutdown(self):
        return None


def _pct(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values) * 1e3
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3), "p99_ms": round(float(np.percentile(arr, 99)), 3),
            "max_ms": round(float(arr.max()), 3), "n": len(values)}  # fmt: skip


async def cold_start(n: int, warmup: int = 5) -> dict[str, dict[str, float]]:
    events = EventSink()
    spec = SandboxSpec()
    async with SandboxPool(LocalBackend(), PoolConfig(max_starting=1), events) as pool:
        for i in range(n + warmup):
            async with pool.sandbox(spec, key=f"w{i}" if i < warmup else f"s{i}") as handle:
                await pool.exec(handle, ["/bin/echo", "ready"])
    t: dict[tuple[str, Ev], float] = {(e.key, e.ev): e.t for e in events.events}
    keys = [f"s{i}" for i in range(warmup, n + warmup)]
    return {
        "request_to_ready": _pct([t[(k, Ev.READY)] - t[(k, Ev.REQUESTED)] for k in keys]),
        "start_span": _pct([t[(k, Ev.READY)] - t[(k, Ev.ADMITTED)] for k in keys]),
        "exec_echo": _pct([t[(k, Ev.EXEC_END)] - t[(k, Ev.EXEC_START)] for k in keys]),
        "stop": _pct([t[(k, Ev.TERMINATED)] - t[(k, Ev.TERMINATE_REQUESTED)] for k in keys]),
    }


async def pool_overhead(n: int) -> float:
    """Seconds per sandbox for create+exec+close through the pool with a backend that does nothing."""
    async with SandboxPool(NullBackend(), PoolConfig(max_starting=16), EventSink()) as pool:
        t0 = time.perf_counter()
        await asyncio.gather(*(pool.run(SandboxSpec(), ["x"]) for _ in range(n)))
        return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = asyncio.run(cold_start(args.n))
    out["pool_overhead_ms_per_sandbox"] = round(asyncio.run(pool_overhead(10_000)) * 1e3, 4)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for name, stats in out.items():
        print(f"{name:32s} {stats}")


if __name__ == "__main__":
    main()
