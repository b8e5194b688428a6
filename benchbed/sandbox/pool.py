"""Sandbox pool: admission control on the starting state, per-phase deadlines, retries, guaranteed close, sweeping."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchbed.sandbox.base import ExecResult, Handle, SandboxBackend, SandboxFailure, SandboxSpec
from benchbed.sandbox.events import Ev, EventSink
from benchbed.sandbox.late import LateCloses
from benchbed.secrets import redact

log = logging.getLogger(__name__)


class PoolConfig(BaseModel):
    """Admission cap and deadlines per phase (seconds); retries apply to the backend's retryable reasons."""

    model_config = ConfigDict(extra="forbid")

    max_starting: int = Field(16, gt=0, description="sandboxes allowed in the starting state at once")
    queue_timeout_s: float | None = Field(None, gt=0, description="longest wait for an admission slot; None: no bound")
    start_timeout_s: float = Field(60.0, gt=0, description="admitted -> ready, per attempt")
    exec_timeout_s: float = Field(60.0, gt=0)
    stop_timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(2, ge=0, description="extra attempts after a retryable start failure")
    backoff_s: float = Field(0.2, ge=0, description="first backoff; doubles per attempt, full jitter")
    backoff_max_s: float = Field(10.0, ge=0)
    seed: int | None = None


@dataclass
class SandboxOutcome:
    """Result of create -> exec -> close for one sandbox; `reason` set when the start failed for good."""

    key: str
    sandbox_id: str = ""
    result: ExecResult | None = None
    reason: str | None = None
    message: str = ""
    warnings: list[str] = field(default_factory=list)


class SandboxPool:
    """Owns sandboxes for a run: every create passes admission, every handle is closed, orphans are swept."""

    def __init__(self, backend: SandboxBackend, config: PoolConfig | None = None,
                 events: EventSink | None = None) -> None:  # fmt: skip
        self.backend = backend
        self.config = config or PoolConfig()
        self.events = events or EventSink()
        self._starting = asyncio.Semaphore(self.config.max_starting)
        self._live: dict[str, Handle] = {}
        self._late = LateCloses()
        self._rng = random.Random(self.config.seed)
        self._n = 0
        self.swept = 0

    async def __aenter__(self) -> SandboxPool:
        self.swept += await self.backend.sweep()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def close_all(self) -> None:
        """Close whatever is still open (even if the caller was cancelled) and wait for late creates to land."""
        for handle in list(self._live.values()):
            with contextlib.suppress(Exception):
                await asyncio.shield(self._close(handle))
        await self._late.wait(self.config.start_timeout_s + self.config.stop_timeout_s)

    async def shutdown(self) -> None:
        """close_all, then sweep orphans and stop the backend."""
        await self.close_all()
        self.swept += await self.backend.sweep(final=True)
        await self.backend.shutdown()

    def _key(self) -> str:
        self._n += 1
        return f"sb{self._n}"

    # ---- create with admission, deadline and retries -----------------------------------------------------------
    async def create(self, spec: SandboxSpec, key: str | None = None) -> Handle:
        """A ready sandbox, or SandboxFailure with the reason of the last attempt."""
        key = key or self._key()
        cfg = self.config
        attempt = 0
        while True:
            try:
                return await self._attempt(spec, key, attempt)
            except SandboxFailure as exc:
                if exc.reason not in self.backend.retryable or attempt >= cfg.retries:
                    raise
                delay = self._rng.uniform(0, min(cfg.backoff_max_s, cfg.backoff_s * 2**attempt))
                log.info("sandbox %s attempt %d failed (%s); retrying in %.2fs", key, attempt, exc.reason, delay)
                await asyncio.sleep(delay)
                attempt += 1

    async def _attempt(self, spec: SandboxSpec, key: str, attempt: int) -> Handle:
        ev = self.events
        ev.emit(key, Ev.REQUESTED, attempt=attempt)
        try:
            await asyncio.wait_for(self._starting.acquire(), self.config.queue_timeout_s)
        except asyncio.TimeoutError:
            message = f"no admission slot within {self.config.queue_timeout_s:g}s"
            ev.emit(key, Ev.FAILED, attempt=attempt, reason="start_timeout", attrs={"message": message, "queued": True})
            raise SandboxFailure("start_timeout", message) from None
        except asyncio.CancelledError:
            withdrawn = {"message": "cancelled in queue", "cancelled": True}
            ev.emit(key, Ev.FAILED, attempt=attempt, reason="internal", attrs=withdrawn)
            raise
        try:
            ev.emit(key, Ev.ADMITTED, attempt=attempt)
            deadline = self.config.start_timeout_s

            def on_step(step: str) -> None:
                ev.emit(key, Ev(step), attempt=attempt)

            task = asyncio.ensure_future(self.backend.create(spec, key=key, deadline_s=deadline, on_step=on_step))
            # The create is shielded: on timeout or cancellation it keeps running and is closed when it lands.
            try:
                done, _ = await asyncio.wait({task}, timeout=deadline + 1.0)
            except asyncio.CancelledError:
                self._late.close_when_done(task, self.backend.close)
                ev.emit(key, Ev.FAILED, attempt=attempt, reason="internal", attrs={"message": "cancelled"})
                raise
            if not done:
                self._late.close_when_done(task, self.backend.close)
                ev.emit(key, Ev.FAILED, attempt=attempt, reason="start_timeout",
                        attrs={"message": f"not ready within {deadline:g}s"})  # fmt: skip
                raise SandboxFailure("start_timeout", f"sandbox not ready within {deadline:g}s")
            try:
                handle = task.result()
            except SandboxFailure as exc:
                message = redact(exc.message[:500])
                ev.emit(key, Ev.FAILED, attempt=attempt, reason=exc.reason, attrs={"message": message})
                raise
            except Exception as exc:  # a backend bug or an unmapped provider error: recorded, never lost
                ev.emit(key, Ev.FAILED, attempt=attempt, reason="internal", attrs={"message": redact(repr(exc)[:500])})
                raise SandboxFailure("internal", repr(exc)) from exc
            self._live[handle.id] = handle
            ev.emit(key, Ev.READY, attempt=attempt, attrs={"id": handle.id})
            return handle
        finally:
            self._starting.release()

    # ---- exec / close ------------------------------------------------------------------------------------------
    async def exec(self, handle: Handle, argv: list[str], timeout_s: float | None = None,
                   env: dict[str, str] | None = None) -> ExecResult:  # fmt: skip
        timeout = timeout_s or self.config.exec_timeout_s
        self.events.emit(handle.key, Ev.EXEC_START)
        result: ExecResult | None = None
        try:
            # The backend enforces the timeout itself; the outer bound only guards against a hung backend.
            result = await asyncio.wait_for(
                self.backend.exec(handle, argv, timeout_s=timeout, env=env), timeout + self.config.stop_timeout_s
            )
            return result
        except asyncio.TimeoutError:
            result = ExecResult(exit_code=None, reason="exec_timeout", message="backend did not return")
            return result
        finally:
            attrs: dict[str, Any] = {}
            if result is not None:
                attrs = {"exit_code": result.exit_code, "limit": result.limit, "truncated": result.truncated}
            self.events.emit(handle.key, Ev.EXEC_END, reason=result.reason if result else "internal", attrs=attrs)

    async def close(self, handle: Handle) -> None:
        await asyncio.shield(self._close(handle))

    async def _close(self, handle: Handle) -> None:
        if handle.id not in self._live:
            return
        self.events.emit(handle.key, Ev.TERMINATE_REQUESTED)
        reason = None
        try:
            await asyncio.wait_for(self.backend.close(handle), self.config.stop_timeout_s)
        except asyncio.TimeoutError:
            reason = "internal"
            log.warning("sandbox %s did not stop within %gs", handle.id, self.config.stop_timeout_s)
        except SandboxFailure as exc:
            reason = exc.reason
            log.warning("sandbox %s: %s", handle.id, exc)
        finally:
            self._live.pop(handle.id, None)
            self.events.emit(handle.key, Ev.TERMINATED, reason=reason)

    @contextlib.asynccontextmanager
    async def sandbox(self, spec: SandboxSpec, key: str | None = None) -> AsyncIterator[Handle]:
        """A ready sandbox that is closed on every path out of the block."""
        handle = await self.create(spec, key)
        try:
            yield handle
        finally:
            await self.close(handle)

    async def run(self, spec: SandboxSpec, argv: list[str], *, key: str | None = None,
                  timeout_s: float | None = None) -> SandboxOutcome:  # fmt: skip
        """create -> exec -> close; start failures become the outcome's reason instead of an exception."""
        key = key or self._key()
        out = SandboxOutcome(key=key)
        try:
            handle = await self.create(spec, key)
        except SandboxFailure as exc:
            out.reason, out.message = exc.reason, exc.message
            return out
        out.sandbox_id, out.warnings = handle.id, list(handle.warnings)
        try:
            out.result = await self.exec(handle, argv, timeout_s)
        finally:
            await self.close(handle)
        return out
