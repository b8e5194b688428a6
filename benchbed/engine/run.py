"""Start the engine's process tree (one trainer, N generator workers, this orchestrator), run it, shut it down,
and write summary.json: the engine's own figures (measured waits, staleness of every trained sample)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

from benchbed.engine.config import EngineConfig
from benchbed.engine.eventlog import SUMMARY_FILENAME, EventLog
from benchbed.engine.runtime import free_port, set_threads

JOIN_TIMEOUT_S = 20.0


def _stop(processes: dict[str, Any], gen_queues: list[Any], batch_queue: Any, graceful: bool) -> None:
    """Ask the workers to finish (or terminate them), then make sure none is left."""
    if graceful:
        for q in gen_queues:
            q.put(None)
        batch_queue.put(None)
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for proc in processes.values():
            proc.join(max(0.0, deadline - time.monotonic()))
    for proc in processes.values():
        if proc.is_alive():
            proc.terminate()
    for proc in processes.values():
        proc.join(5.0)
        if proc.is_alive():
            proc.kill()
            proc.join()


def summary(cfg: EngineConfig, orch: Any, error: str | None, wall_s: float) -> dict[str, Any]:
    """The engine's ground truth: per-step timings measured by the trainer, idle over the window, staleness."""
    steps = [{"step": k, **t} for k, t in sorted(orch.step_timing.items())]
    window = [s for s in steps if s["step"] > cfg.warmup_steps]
    step_s = sum(s["step_s"] for s in window)
    return {
        "status": "failed" if error else "succeeded", "error": error, "mode": cfg.mode_label,
        "steps_done": len(steps), "steps": steps, "warmup_steps": cfg.warmup_steps, "wall_s": wall_s,
        "trainer_idle_ratio": sum(s["wait_s"] for s in window) / step_s if step_s else None,
        "trained_staleness": orch.trained_staleness, "batches_sent": orch.batches_sent,
        "groups_admitted": len(orch.groups), "concurrency": cfg.concurrency,
    }  # fmt: skip


def preload(cfg: EngineConfig) -> None:
    """Import torch and the model code once, before forking the workers: they inherit it instead of each paying
    for the import (seconds per process on a small machine). Nothing here starts a thread or touches a device."""
    set_threads(cfg.ref.threads)
    from benchbed.engine.model import model_class

    model_class(cfg.ref.model.arch)


def run_engine(cfg: EngineConfig, run_dir: Path) -> int:
    """Run to the end; 0 on success, 1 when the run failed part-way (its events and summary are kept)."""
    from benchbed.engine.generator import generator_main
    from benchbed.engine.orchestrator import Orchestrator
    from benchbed.engine.tasks import build_tokenizer
    from benchbed.engine.trainer import trainer_main

    run_dir.mkdir(parents=True, exist_ok=True)
    start = time.time()
    log = EventLog(run_dir, "orchestrator")
    preload(cfg)
    ctx = mp.get_context("fork")
    port = free_port()
    published = ctx.Value("i", 0)
    cfg_json = cfg.model_dump_json()
    gen_queues = [ctx.Queue() for _ in range(cfg.ref.generators)]
    results, batch_queue, trainer_events = ctx.Queue(), ctx.Queue(), ctx.Queue()
    processes: dict[str, Any] = {
        "trainer": ctx.Process(target=trainer_main, name="ref-trainer", daemon=True,
                               args=(cfg_json, str(run_dir), port, published, batch_queue, trainer_events)),
    }  # fmt: skip
    for i, q in enumerate(gen_queues):
        processes[f"gen{i}"] = ctx.Process(target=generator_main, name=f"ref-gen{i}", daemon=True,
                                           args=(i, cfg_json, str(run_dir), port, published, q, results))  # fmt: skip
    log.write("run_start", t=start, pid=os.getpid(), config=json.loads(cfg_json), mode=cfg.mode_label,
              concurrency=cfg.concurrency, batch_size=cfg.batch_size, world_size=cfg.ref.generators + 1)  # fmt: skip
    for proc in processes.values():
        proc.start()
    log.write("spawned", pids={role: p.pid for role, p in processes.items()})
    orch = Orchestrator(cfg, log, build_tokenizer(), gen_queues, batch_queue, processes)

    def on_signal(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    error: str | None
    try:
        error = asyncio.run(orch.run([results, trainer_events]))
    except KeyboardInterrupt as exc:
        error = f"interrupted ({exc or 'SIGINT'})"
    finally:
        orch.stopping = True
    _stop(processes, gen_queues, batch_queue, graceful=error is None)
    results.put(None)
    trainer_events.put(None)
    wall = time.time() - start
    (run_dir / SUMMARY_FILENAME).write_text(json.dumps(summary(cfg, orch, error, wall), indent=1))
    log.write("run_end", status="failed" if error else "succeeded", error=error, wall_s=wall)
    log.close()
    return 1 if error else 0
