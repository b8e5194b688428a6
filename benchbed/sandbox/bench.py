"""sandbox-bench: sweep concurrency levels through the pool, time bare fork/exec of the same program as the
machine's spawn limit, and store the run (record, trace with sandbox spans, metrics) like any other run."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchbed.cli.console import err_console
from benchbed.keys import SANDBOX_START
from benchbed.record import AdapterInfo, ErrorInfo, RunRecord, benchbed_info, machine_info, utc_now
from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import Ev, EventSink, add_spans
from benchbed.sandbox.pool import PoolConfig, RunOutcome, SandboxPool
from benchbed.sandbox.procs import Child
from benchbed.sandbox.registry import get_backend
from benchbed.secrets import redact
from benchbed.store import Store, write_record
from benchbed.trace import Trace, TraceBuilder, TraceMeta

DEFAULT_PROGRAM = ["/usr/bin/python3", "-c", "print(sum(i * i for i in range(10000)))"]
ADAPTER = "sandbox"


class BenchConfig(BaseModel):
    """One sweep: levels of concurrency, sandboxes per level, admission cap and the program each runs."""

    model_config = ConfigDict(extra="forbid")

    name: str = "sandbox-bench"
    backend: str = "local"
    levels: list[int] = Field(default_factory=lambda: [1, 32, 96, 256, 960])
    per_level: int | None = Field(None, gt=0, description="sandboxes per level; default: the level itself")
    max_starting: int | None = Field(None, gt=0, description="admission cap; default: the level (no cap)")
    start_timeout_s: float = Field(120.0, gt=0)
    exec_timeout_s: float = Field(60.0, gt=0)
    retries: int = Field(0, ge=0, description="0 so that every init failure shows in the failure rate")
    program: list[str] = Field(default_factory=lambda: list(DEFAULT_PROGRAM))
    baseline: bool = True
    sandbox: SandboxSpec = Field(default_factory=lambda: SandboxSpec(memory_mb=256, lifetime_s=900))

    def spec_dict(self) -> dict[str, Any]:
        return {"name": self.name, "adapter": ADAPTER, "sandbox_bench": self.model_dump(mode="json")}

    def spec_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.spec_dict(), sort_keys=True).encode()).hexdigest()[:8]
        return f"{re.sub(r'[^A-Za-z0-9._-]+', '-', self.name)}-{self.backend}-{digest}"


async def _level(pool: SandboxPool, cfg: BenchConfig, level: int, on_done) -> list[RunOutcome]:
    n = cfg.per_level or level
    gate = asyncio.Semaphore(level)

    async def one(i: int) -> RunOutcome:
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


def _summarize(events: EventSink, level: int, outcomes: list[RunOutcome], bare_s: float | None,
               wall_s: float) -> dict[str, Any]:  # fmt: skip
    keys = {o.key for o in outcomes}
    t: dict[tuple[str, Ev, int], float] = {}
    for e in events.events:
        if e.key in keys:
            t[(e.key, e.ev, e.attempt)] = e.t
    starts = [t[(k, Ev.READY, a)] - t[(k, Ev.ADMITTED, a)] for (k, ev, a) in t if ev is Ev.READY]
    queues = [t[(k, Ev.ADMITTED, a)] - t[(k, Ev.REQUESTED, a)] for (k, ev, a) in t if ev is Ev.ADMITTED]
    requested = [v for (k, ev, a), v in t.items() if ev is Ev.REQUESTED]
    ready = [v for (k, ev, a), v in t.items() if ev is Ev.READY]
    n = len(outcomes)
    failures = sum(1 for o in outcomes if o.reason is not None)
    exec_failures = sum(1 for o in outcomes if o.result is not None and not o.result.ok)
    span = (max(ready) - min(requested)) if ready else None

    def pct(xs: list[float], q: float) -> float | None:
        return round(float(np.percentile(xs, q)) * 1e3, 3) if xs else None

    row: dict[str, Any] = {
        "level": level, "n": n, "failures": failures, "exec_failures": exec_failures,
        "failure_rate": failures / n if n else None,
        "start_p50_ms": pct(starts, 50), "start_p99_ms": pct(starts, 99), "start_max_ms": pct(starts, 100),
        "queue_p50_ms": pct(queues, 50), "queue_p99_ms": pct(queues, 99),
        "starts_per_s": round(len(ready) / span, 2) if span else None,
        "completions_per_s": round(n / wall_s, 2), "wall_s": round(wall_s, 3),
        "reasons": sorted({o.reason for o in outcomes if o.reason}),
    }  # fmt: skip
    if bare_s is not None:
        # The host's spawn limit: fork/exec and run the same program, as many at a time as the level.
        row["bare_completions_per_s"] = round(n / bare_s, 2)
        row["start_ratio_vs_bare"] = round(row["bare_completions_per_s"] / row["starts_per_s"], 3) if span else None
        row["slowdown_vs_bare"] = round((n / bare_s) / (n / wall_s), 3)
    return row


async def sweep(cfg: BenchConfig, events: EventSink, progress: bool = True) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every level through a pool (sweeping orphans at start and end); one summary row per level, and the
    backend's warnings (degraded capabilities)."""
    backend = get_backend(cfg.backend)
    total = sum(cfg.per_level or lv for lv in cfg.levels)
    summary: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not progress) as bar:
        task = bar.add_task(f"sandbox-bench {cfg.backend}", total=total)
        for level in cfg.levels:
            bar.update(task, description=f"sandbox-bench {cfg.backend} level {level}")
            config = PoolConfig(max_starting=cfg.max_starting or level, start_timeout_s=cfg.start_timeout_s,
                                exec_timeout_s=cfg.exec_timeout_s, retries=cfg.retries)  # fmt: skip
            pool = SandboxPool(backend, config, events)
            pool.swept += await backend.sweep()
            t0 = time.perf_counter()
            try:
                outcomes = await _level(pool, cfg, level, lambda: bar.advance(task))
            finally:
                await pool.close_all()
            wall = time.perf_counter() - t0
            bare = await _bare(cfg.program, level, cfg.per_level or level) if cfg.baseline else None
            summary.append(_summarize(events, level, outcomes, bare, wall))
    await backend.sweep(final=True)
    await backend.shutdown()
    return summary, list(getattr(backend, "warnings", []))


def build_trace(cfg: BenchConfig, events: EventSink, summary: list[dict[str, Any]], warnings: list[str]) -> Trace:
    """The run's canonical trace: sandbox spans from the events, the per-level summary in meta.extra."""
    builder = TraceBuilder()
    add_spans(builder, events.events, lambda key: {"level": int(key[1:].split("-")[0]), "backend": cfg.backend})
    meta = TraceMeta(
        adapter=ADAPTER, framework=f"sandbox-{cfg.backend}", mode="bench", concurrency=max(cfg.levels),
        warnings=warnings, extra={"sandbox_bench": {"config": cfg.model_dump(mode="json"), "levels": summary}},
    )  # fmt: skip
    return builder.build(meta)


def starts_by_level(trace: Trace) -> pd.DataFrame:
    """One row per sandbox.start span of a sandbox-bench trace: level, status, start_s, sorted for CDF plots."""
    starts = trace.of(SANDBOX_START)
    levels = [json.loads(a).get("level") if a else None for a in starts["attrs"]]
    out = pd.DataFrame({"level": levels, "status": starts["status"].astype(str).to_numpy(),
                        "start_s": (starts["t1"] - starts["t0"]).to_numpy()})  # fmt: skip
    return out.dropna(subset=["level"]).astype({"level": int}).sort_values(["level", "start_s"], ignore_index=True)


def run_bench(cfg: BenchConfig, store_dir: Path, progress: bool = True) -> tuple[RunRecord, Path, list[dict]]:
    """Store a started record, run the sweep, write trace + metrics + summary, finalize the record."""
    from benchbed.metrics import compute_metrics

    info = benchbed_info()
    machine = machine_info()
    store = Store(store_dir)
    run_dir = store.new_run_dir(machine.name, ADAPTER, cfg.spec_id(), info.commit)
    record = RunRecord(spec=cfg.spec_dict(), spec_id=cfg.spec_id(), adapter=AdapterInfo(
        name=ADAPTER, framework=f"sandbox-{cfg.backend}", mode="bench"), benchbed=info, machine=machine)
    write_record(run_dir, record)
    events = EventSink()
    t0 = time.perf_counter()
    try:
        summary, warnings = asyncio.run(sweep(cfg, events, progress))
    except BaseException as exc:
        record.status = "failed"
        record.error = ErrorInfo(message=redact(str(exc) or repr(exc)))
        record.finished_at = utc_now().isoformat()
        record.duration_s = time.perf_counter() - t0
        write_record(run_dir, record)
        raise
    trace = build_trace(cfg, events, summary, warnings)
    trace.validate()
    trace.write(run_dir)
    (run_dir / "sandbox_bench.json").write_text(json.dumps(summary, indent=2))
    record.warnings = warnings
    record.metrics = compute_metrics(trace, warmup_steps=0, warnings=record.warnings)
    record.trace_events = len(trace.events)
    record.status = "succeeded" if len(trace.of(SANDBOX_START)) else "failed"
    record.finished_at = utc_now().isoformat()
    record.duration_s = round(time.perf_counter() - t0, 3)
    write_record(run_dir, record)
    return record, run_dir, summary


def main(argv: list[str] | None = None) -> int:
    """`python -m benchbed.sandbox.bench --config FILE.json --store DIR` (how the sandbox adapter launches it)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="BenchConfig as JSON")
    parser.add_argument("--out", type=Path, required=True, help="run directory to write trace.parquet into")
    args = parser.parse_args(argv)
    cfg = BenchConfig.model_validate_json(args.config.read_text())
    events = EventSink()
    summary, warnings = asyncio.run(sweep(cfg, events, progress=False))
    trace = build_trace(cfg, events, summary, warnings)
    trace.validate()
    trace.write(args.out)
    (args.out / "sandbox_bench.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
