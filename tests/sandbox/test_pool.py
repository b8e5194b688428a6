"""Pool behaviour with a scripted backend: admission cap, queue vs start time, retries, deadlines, guaranteed
close, late creates, and the trace spans and metrics the events become."""

from __future__ import annotations

import asyncio

import pytest

from benchbed.keys import SANDBOX_EXEC, SANDBOX_QUEUE, SANDBOX_START, SANDBOX_STOP
from benchbed.metrics import compute_metrics
from benchbed.sandbox.base import ExecResult, Handle, SandboxFailure, SandboxSpec
from benchbed.sandbox.events import Ev, EventSink, add_spans, phase_durations
from benchbed.sandbox.pool import PoolConfig, SandboxPool
from benchbed.trace import TraceBuilder, TraceMeta


class ScriptedBackend:
    name = "scripted"
    retryable = frozenset({"no_capacity", "start_timeout"})

    def __init__(self, create_s: float = 0.0, failures: list[str] | None = None) -> None:
        self.create_s = create_s
        self.failures = list(failures or [])
        self.starting = 0
        self.max_starting_seen = 0
        self.open: set[str] = set()
        self.closed: list[str] = []
        self.swept: list[bool] = []
        self.n = 0

    async def create(self, spec, *, key, deadline_s, on_step):
        self.starting += 1
        self.max_starting_seen = max(self.max_starting_seen, self.starting)
        try:
            on_step("create_sent")
            await asyncio.sleep(self.create_s)
            if self.failures:
                raise SandboxFailure(self.failures.pop(0), "scripted")
            on_step("started")
            self.n += 1
            self.open.add(f"h{self.n}")
            return Handle(id=f"h{self.n}", backend=self.name, key=key)
        finally:
            self.starting -= 1

    async def exec(self, handle, argv, *, timeout_s, env=None):
        if argv == ["boom"]:
            raise RuntimeError("backend bug")
        return ExecResult(exit_code=0, stdout=b"ok")

    async def close(self, handle):
        self.open.discard(handle.id)
        self.closed.append(handle.id)

    async def sweep(self, *, final=False):
        self.swept.append(final)
        return 0

    async def shutdown(self):
        return None


def test_admission_caps_starting_and_separates_queue_from_start():
    backend = ScriptedBackend(create_s=0.02)
    events = EventSink()

    async def main():
        async with SandboxPool(backend, PoolConfig(max_starting=3), events) as pool:
            await asyncio.gather(*(pool.run(SandboxSpec(), ["x"], key=f"k{i}") for i in range(12)))

    asyncio.run(main())
    assert backend.max_starting_seen == 3
    assert backend.open == set() and len(backend.closed) == 12
    assert backend.swept == [False, True]  # swept at start and at the end
    builder = TraceBuilder()
    assert add_spans(builder, events.events) == 12 * 4
    trace = builder.build(TraceMeta(adapter="test"))
    queue = trace.of(SANDBOX_QUEUE)
    start = trace.of(SANDBOX_START)
    assert len(queue) == len(start) == len(trace.of(SANDBOX_EXEC)) == len(trace.of(SANDBOX_STOP)) == 12
    waits = sorted((queue["t1"] - queue["t0"]).round(2))
    assert waits[0] < 0.01 and waits[-1] >= 0.05  # the last of 4 waves waited for three create slots
    assert ((start["t1"] - start["t0"]) >= 0.015).all()  # start spans exclude the queue wait
    metrics = compute_metrics(trace, warmup_steps=0)
    assert metrics["sandbox_init_failure_rate"].value == 0.0
    assert metrics["sandbox_queue_p99_s"].value >= metrics["sandbox_queue_p50_s"].value


def test_retryable_failures_retry_with_each_attempt_recorded():
    backend = ScriptedBackend(failures=["no_capacity", "start_timeout"])
    events = EventSink()

    async def main():
        async with SandboxPool(backend, PoolConfig(retries=2, backoff_s=0.001), events) as pool:
            return await pool.run(SandboxSpec(), ["x"], key="k")

    out = asyncio.run(main())
    assert out.reason is None and out.result.ok
    builder = TraceBuilder()
    add_spans(builder, events.events)
    trace = builder.build(TraceMeta(adapter="test"))
    starts = trace.of(SANDBOX_START)
    assert list(starts["status"].astype(str)) == ["no_capacity", "start_timeout", "ok"]
    assert compute_metrics(trace, warmup_steps=0)["sandbox_init_failure_rate"].value == pytest.approx(2 / 3)


def test_non_retryable_failure_and_retry_budget():
    backend = ScriptedBackend(failures=["auth", "no_capacity", "no_capacity", "no_capacity"])

    async def main():
        async with SandboxPool(backend, PoolConfig(retries=1, backoff_s=0)) as pool:
            first = await pool.run(SandboxSpec(), ["x"])
            second = await pool.run(SandboxSpec(), ["x"])
            return first, second

    first, second = asyncio.run(main())
    assert first.reason == "auth"
    assert second.reason == "no_capacity" and backend.failures == ["no_capacity"]  # 2 attempts, not 3


def test_start_deadline_and_late_create_is_closed():
    backend = ScriptedBackend(create_s=1.5)
    events = EventSink()

    async def main():
        async with SandboxPool(backend, PoolConfig(start_timeout_s=0.05, retries=0), events) as pool:
            return await pool.run(SandboxSpec(), ["x"], key="k")

    out = asyncio.run(main())
    assert out.reason == "start_timeout"
    assert backend.n == 1 and backend.open == set()  # the create landed later and was closed by the pool
    assert [e.reason for e in events.events if e.ev is Ev.FAILED] == ["start_timeout"]


def test_close_on_error_and_on_cancellation():
    backend = ScriptedBackend(create_s=0.0)

    async def main():
        async with SandboxPool(backend, PoolConfig()) as pool:
            with pytest.raises(ValueError):
                async with pool.sandbox(SandboxSpec()):
                    raise ValueError("user code failed")
            slow = ScriptedBackend(create_s=0.3)
            async with SandboxPool(slow, PoolConfig(start_timeout_s=30)) as pool2:
                task = asyncio.ensure_future(pool2.run(SandboxSpec(), ["x"]))
                await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            return slow

    slow = asyncio.run(main())
    assert backend.open == set() and backend.closed == ["h1"]
    assert slow.n == 1 and slow.open == set()  # the cancelled create landed and was closed


def test_backend_exception_in_exec_still_closes():
    backend = ScriptedBackend()

    async def main():
        async with SandboxPool(backend, PoolConfig()) as pool:
            with pytest.raises(RuntimeError):
                await pool.run(SandboxSpec(), ["boom"])

    asyncio.run(main())
    assert backend.open == set()


def test_phase_durations_per_key():
    events = EventSink(clock=iter([0.0, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 5.5, 6.0]).__next__)
    for ev in (Ev.REQUESTED, Ev.ADMITTED, Ev.CREATE_SENT, Ev.STARTED, Ev.READY, Ev.EXEC_START, Ev.EXEC_END,
               Ev.TERMINATE_REQUESTED, Ev.TERMINATED):  # fmt: skip
        events.emit("a", ev)
    durations = phase_durations(events.events, "a")
    assert durations == {"queue_s": 0.5, "start_s": 1.5, "exec_s": 0.5, "stop_s": 0.5}


def test_negative_or_zero_limits_are_rejected():
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxSpec(memory_mb=-1)
    with pytest.raises(ValueError, match="max_starting"):
        PoolConfig(max_starting=0)


def test_provider_messages_are_redacted(monkeypatch):
    monkeypatch.setenv("PRIME_API_KEY", "pk-secret-123456")
    backend = ScriptedBackend()

    async def create(spec, *, key, deadline_s, on_step):
        raise SandboxFailure("auth", "key pk-secret-123456 rejected")

    backend.create = create
    events = EventSink()

    async def main():
        async with SandboxPool(backend, PoolConfig(), events) as pool:
            return await pool.run(SandboxSpec(), ["x"])

    out = asyncio.run(main())
    assert out.reason == "auth"
    failed = [e for e in events.events if e.ev is Ev.FAILED]
    assert failed[0].attrs["message"] == "key *** rejected"


def test_queue_deadline_fails_the_start_and_records_the_wait():
    backend = ScriptedBackend(create_s=0.3)
    events = EventSink()

    async def main():
        config = PoolConfig(max_starting=1, queue_timeout_s=0.05, retries=0)
        async with SandboxPool(backend, config, events) as pool:
            return await asyncio.gather(*(pool.run(SandboxSpec(), ["x"], key=k) for k in "ab"))

    first, second = asyncio.run(main())
    assert first.reason is None and second.reason == "start_timeout" and "admission" in second.message
    builder = TraceBuilder()
    add_spans(builder, events.events)
    trace = builder.build(TraceMeta(adapter="test"))
    queue_b = trace.of(SANDBOX_QUEUE)[trace.of(SANDBOX_QUEUE)["sample"] == "b"]
    start_b = trace.of(SANDBOX_START)[trace.of(SANDBOX_START)["sample"] == "b"]
    assert float((queue_b["t1"] - queue_b["t0"]).iloc[0]) >= 0.04
    assert list(start_b["status"].astype(str)) == ["start_timeout"]
    assert float((start_b["t1"] - start_b["t0"]).iloc[0]) == 0.0  # never started: no start latency counted
    assert compute_metrics(trace, warmup_steps=0)["sandbox_init_failure_rate"].value == 0.5
