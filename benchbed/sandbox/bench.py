"""sandbox-bench: sweep concurrency levels through the pool and time bare fork/exec of the same program as the
machine's spawn limit. Launched by the `sandbox` adapter (`python -m benchbed.sandbox.bench`), so a sweep is stored,
measured and reported like any other run; everything per level is computed from the trace it writes."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink, add_spans
from benchbed.sandbox.pool import PoolConfig, SandboxOutcome, SandboxPool
from benchbed.sandbox.procs import Child
from benchbed.sandbox.registry import get_backend
from benchbed.trace import Trace, TraceBuilder, TraceMeta

DEFAULT_PROGRAM = ["/usr/bin/python3", "-c", "print(sum(i * i for i in range(10000)))"]
ADAPTER = "sandbox"


class BenchOptions(BaseModel):
    """A spec's [sandbox_bench] table: levels of concurrency, sandboxes per level, admission cap and the program
    each runs (the backend comes from the spec's [sandbox] table)."""

    model_config = ConfigDict(extra="forbid")

    levels: list[int] = Field(default_factory=lambda: [1, 32, 96, 256, 960])
    per_level: int | None = Field(None, gt=0, description="sandboxes per level; default: the level itself")
    max_starting: int | None = Field(None, gt=0, description="admission cap; default: the level (no cap)")
    start_timeout_s: float = Field(120.0, gt=0)
    exec_timeout_s: float = Field(60.0, gt=0)
    retries: int = Field(0, ge=0, description="0 so that every init failure shows in the failure rate")
    program: list[str] = Field(default_factory=lambda: list(DEFAULT_PROGRAM))
    baseline: bool = True
    sandbox: SandboxSpec = Field(default_factory=lambda: SandboxSpec(memory_mb=256, lifetime_s=900))


class BenchConfig(BenchOptions):
    """One sweep as the bench runs it: the spec's options plus its name and backend."""

    name: str = "sandbox-bench"
    backend: str = "local"


async def _level(pool: SandboxPool, cfg: BenchConfig, level: int, on_done: Callable[[], None]) -> list[SandboxOutcome]:
    n = cfg.per_level or level
    gate = asyncio.Semaphore(level)

    async def one(i: int) -> SandboxOutcome:
        async with gate:
            out = await pool.run(cfg.sandbox, cfg.program, key=f"c{level}-{i}", timeout_s=cfg.exec_timeout_s)
        on_done()
        return out

    return await asyncio.gather(*(one(i) for i in range(n)))


async def _bare(program: list[str], level: int, n: int) -> float:
    """Seconds to fork/exec and wait for `n` copies of the program, `level` at a time, on the bare host."""
    gate = asyncio.Semaphore(level)

    async def one() -> None:
        async with gate:
            child = await Child.spawn(program, cap=1 << 20)
            await child.wait()
            child.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - t0


Progress = Callable[[int, int], None]  # (sandboxes done, sandboxes in the sweep)


async def sweep(
    cfg: BenchConfig, events: EventSink, on_progress: Progress | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every level through a pool (sweeping orphans at start and end). Returns what the trace cannot hold,
    per level: sandboxes requested, wall time and the bare fork/exec time; and the backend's warnings."""
    backend = get_backend(cfg.backend)
    total = sum(cfg.per_level or lv for lv in cfg.levels)
    done = 0

    def advance() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    measured: list[dict[str, Any]] = []
    for level in cfg.levels:
        config = PoolConfig(max_starting=cfg.max_starting or level, start_timeout_s=cfg.start_timeout_s,
                            exec_timeout_s=cfg.exec_timeout_s, retries=cfg.retries)  # fmt: skip
        pool = SandboxPool(backend, config, events)
        pool.swept += await backend.sweep()
        t0 = time.perf_counter()
        try:
            await _level(pool, cfg, level, advance)
        finally:
            await pool.close_all()
        wall = time.perf_counter() - t0
        n = cfg.per_level or level
        bare = await _bare(cfg.program, level, n) if cfg.baseline else None
        measured.append({"level": level, "n": n, "wall_s": round(wall, 6), "bare_s": bare and round(bare, 6)})
    await backend.sweep(final=True)
    await backend.shutdown()
    return measured, list(getattr(backend, "warnings", []))


def build_trace(cfg: BenchConfig, events: EventSink, measured: list[dict[str, Any]], warnings: list[str]) -> Trace:
    """The run's canonical trace: sandbox spans from the events; the config and the per-level wall and bare
    fork/exec times in meta.extra (series.sandbox_levels derives every per-level figure from these)."""
    builder = TraceBuilder()
    add_spans(builder, events.events, lambda key: {"level": int(key[1:].split("-")[0]), "backend": cfg.backend})
    meta = TraceMeta(
        adapter=ADAPTER, framework=f"sandbox-{cfg.backend}", mode="bench", concurrency=max(cfg.levels),
        warnings=warnings, extra={"sandbox_bench": {"config": cfg.model_dump(mode="json"), "measured": measured}},
    )  # fmt: skip
    return builder.build(meta)


def main(argv: list[str] | None = None) -> int:
    """`python -m benchbed.sandbox.bench --config FILE.json --out DIR` (how the sandbox adapter launches it);
    prints `progress N/M` lines on stderr."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="BenchConfig as JSON")
    parser.add_argument("--out", type=Path, required=True, help="run directory to write trace.parquet into")
    args = parser.parse_args(argv)
    cfg = BenchConfig.model_validate_json(args.config.read_text())
    events = EventSink()
    measured, warnings = asyncio.run(sweep(cfg, events, _print_progress))
    trace = build_trace(cfg, events, measured, warnings)
    trace.validate()
    trace.write(args.out)
    return 0


def _print_progress(done: int, total: int) -> None:
    """One line per percent (or per sandbox for small sweeps), the form launch_progress reads."""
    if done == total or done * 100 // total != (done - 1) * 100 // total:
        print(f"progress {done}/{total}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
