"""The rollouts' sandboxes: benchbed's local backend behind its pool, with every lifecycle event streamed into the
engine's log, and start failures injected on purpose by asking bubblewrap for a path that does not exist."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from benchbed.sandbox.base import ExecResult, Handle, OnStep, SandboxSpec
from benchbed.sandbox.events import Ev, EventSink
from benchbed.sandbox.pool import PoolConfig, SandboxPool
from benchbed.sandbox.registry import get_backend

MISSING_PATH = "/nonexistent/benchbed-ref-fault"
ROLLOUT_SANDBOX = SandboxSpec(memory_mb=256, pids_max=64, disk_mb=16, max_files=1000, lifetime_s=300)


@dataclass
class LoggedSink(EventSink):
    """An EventSink on the epoch clock (origin 0) that also writes each event to the engine's log."""

    log: Any = None

    def __post_init__(self) -> None:
        self.origin = 0.0

    def emit(self, key: str, ev: Ev, *, attempt: int = 0, reason: str | None = None,
             attrs: dict[str, Any] | None = None) -> float:  # fmt: skip
        t = super().emit(key, ev, attempt=attempt, reason=reason, attrs=attrs)
        if self.log is not None:
            self.log.write("sandbox", t=t, key=key, step=ev.value, attempt=attempt, reason=reason, attrs=attrs)
        return t


class FaultInjectingBackend:
    """Delegates to a real backend; a `rate` fraction of create attempts asks it for a sandbox that cannot start
    (a read-only bind of a missing path), so the failure is bubblewrap's own, classified by the backend."""

    def __init__(self, inner: Any, rate: float, seed: int) -> None:
        self.inner = inner
        self.rate = rate
        self.rng = random.Random(seed)
        self.name = inner.name
        self.retryable = inner.retryable

    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle:
        if self.rate and self.rng.random() < self.rate:
            spec = spec.model_copy(update={"ro_binds": [*spec.ro_binds, MISSING_PATH]})
        return await self.inner.create(spec, key=key, deadline_s=deadline_s, on_step=on_step)

    async def exec(self, handle: Handle, argv: list[str], *, timeout_s: float,
                   env: dict[str, str] | None = None) -> ExecResult:  # fmt: skip
        return await self.inner.exec(handle, argv, timeout_s=timeout_s, env=env)

    async def close(self, handle: Handle) -> None:
        await self.inner.close(handle)

    async def sweep(self, *, final: bool = False) -> int:
        return await self.inner.sweep(final=final)

    async def shutdown(self) -> None:
        await self.inner.shutdown()


def make_pool(log: Any, max_starting: int, failure_rate: float, seed: int) -> SandboxPool:
    backend = FaultInjectingBackend(get_backend("local"), failure_rate, seed)
    config = PoolConfig(max_starting=max_starting, start_timeout_s=30.0, exec_timeout_s=30.0, retries=1,
                        backoff_s=0.01, seed=seed)  # fmt: skip
    return SandboxPool(backend, config, events=LoggedSink(clock=time.time, log=log))
