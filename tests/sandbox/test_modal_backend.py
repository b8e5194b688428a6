"""Modal backend against a fake of the SDK surface it uses: tagging, shielded create, deadlines, failure
mapping, exec results, sweeping. The real SDK's signatures are checked too, so drift shows here."""

from __future__ import annotations

import asyncio
import inspect
import os

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import Ev, EventSink
from benchbed.sandbox.modal_backend import ModalBackend, classify
from benchbed.sandbox.pool import PoolConfig, SandboxPool

from .fakes import FakeModal, FakeProcess


def run(coro):
    return asyncio.run(coro)


def make(fake: FakeModal, **kw) -> ModalBackend:
    return ModalBackend(sdk=fake, run_id="run123", **kw)


def test_create_exec_close_tags_and_events():
    fake = FakeModal()
    events = EventSink()

    async def main():
        async with SandboxPool(make(fake), PoolConfig(max_starting=2), events) as pool:
            return await pool.run(SandboxSpec(image="python:3.11"), ["python", "-c", "print(1)"], key="k1")

    out = run(main())
    assert out.result.exit_code == 0 and out.result.stdout == b"out"
    sb = fake.sandboxes[0]
    assert sb.tags["benchbed_run"] == "run123" and sb.tags["benchbed_key"] == "k1"
    assert sb.kwargs["image"] == "img:python:3.11" and sb.kwargs["block_network"] is True
    assert sb.kwargs["memory"] == (512, 512) and sb.kwargs["cpu"] == (1.0, 1.0)
    assert sb.execs[0] == ("true",)  # readiness probe before ready
    assert sb.terminated
    assert [e.ev for e in events.events] == [
        Ev.REQUESTED,
        Ev.ADMITTED,
        Ev.CREATE_SENT,
        Ev.STARTED,
        Ev.READY,
        Ev.EXEC_START,
        Ev.EXEC_END,
        Ev.TERMINATE_REQUESTED,
        Ev.TERMINATED,
    ]


def test_max_throttle_wait_is_set(monkeypatch):
    monkeypatch.delenv("MODAL_MAX_THROTTLE_WAIT", raising=False)
    make(FakeModal(), max_throttle_wait_s=7)
    assert os.environ["MODAL_MAX_THROTTLE_WAIT"] == "7"


def test_capacity_error_is_retried_then_succeeds():
    fake = FakeModal()
    fake.create_errors = [fake.exception.ResourceExhaustedError("Insufficient capacity to create sandbox.")]
    events = EventSink()

    async def main():
        async with SandboxPool(make(fake), PoolConfig(retries=2, backoff_s=0.0), events) as pool:
            return await pool.run(SandboxSpec(), ["echo"])

    out = run(main())
    assert out.reason is None and out.result.ok
    failed = [e for e in events.events if e.ev is Ev.FAILED]
    assert [(e.reason, e.attempt) for e in failed] == [("no_capacity", 0)]


def test_auth_error_is_not_retried():
    fake = FakeModal()
    fake.create_errors = [fake.exception.AuthError("Token missing")] * 3

    async def main():
        async with SandboxPool(make(fake), PoolConfig(retries=2, backoff_s=0.0)) as pool:
            return await pool.run(SandboxSpec(), ["echo"])

    out = run(main())
    assert out.reason == "auth" and "Token missing" in out.message
    assert len(fake.create_errors) == 2  # one attempt only


def test_slow_create_times_out_and_the_late_sandbox_is_terminated():
    fake = FakeModal()
    fake.create_delay = 0.3

    async def main():
        async with SandboxPool(make(fake), PoolConfig(start_timeout_s=0.05, retries=0)) as pool:
            return await pool.run(SandboxSpec(), ["echo"])

    out = run(main())
    assert out.reason == "start_timeout"
    assert len(fake.sandboxes) == 1 and fake.sandboxes[0].terminated  # shielded create, then cleaned up


def test_exec_timeout_return_code_and_output_cap():
    fake = FakeModal()
    fake.exec_results = [FakeProcess(-1), FakeProcess(0, [b"x" * 600, b"y" * 600])]

    async def main():
        backend = make(fake)
        spec = SandboxSpec(output_limit_bytes=1000)
        handle = await backend.create(spec, key="k", deadline_s=5, on_step=lambda s: None)
        timed_out = await backend.exec(handle, ["sleep", "9"], timeout_s=1)
        flood = await backend.exec(handle, ["yes"], timeout_s=1)
        await backend.close(handle)
        return timed_out, flood

    timed_out, flood = run(main())
    assert timed_out.reason == "exec_timeout" and timed_out.exit_code is None
    assert flood.limit == "output" and flood.truncated and len(flood.stdout) == 1000


def test_sweeps_by_tag():
    fake = FakeModal()

    async def main():
        backend = make(fake)
        mine = await backend.create(SandboxSpec(), key="a", deadline_s=5, on_step=lambda s: None)
        # a sandbox left behind by a benchbed process on this host that has died
        orphan = await fake.Sandbox.create.aio("sleep", tags={**backend.tags, "benchbed_run": "old",
                                                               "benchbed_pid": "999999999"})  # fmt: skip
        started = await backend.sweep()
        final = await backend.sweep(final=True)
        return mine, orphan, started, final

    mine, orphan, started, final = run(main())
    assert started == 1 and orphan.terminated
    assert final == 1 and mine.state.sandbox.terminated


@pytest.mark.parametrize(
    ("name", "message", "reason"),
    [("ResourceExhaustedError", "Insufficient capacity", "no_capacity"),
     ("ResourceExhaustedError", "RESOURCE_EXHAUSTED: throttled", "rate_limited"),
     ("AuthError", "", "auth"), ("SandboxTimeoutError", "", "lifetime_timeout"),
     ("SandboxTerminatedError", "", "lost"), ("NotFoundError", "", "lost"),
     ("ImageBuildError", "", "image_error"), ("InternalError", "", "internal"),
     ("ConnectionError", "Could not connect", "internal"),
     ("InternalError", "image pull failed: manifest unknown", "image_error"),
     ("InternalError", "429 Too Many Requests", "rate_limited")],
)  # fmt: skip
def test_classify(name, message, reason):
    exc_mod = FakeModal().exception
    assert classify(getattr(exc_mod, name)(message), exc_mod) == reason


def test_real_sdk_has_the_calls_we_make():
    modal = pytest.importorskip("modal")
    create = inspect.signature(modal.Sandbox.create).parameters
    for kw in ("app", "image", "timeout", "cpu", "memory", "block_network", "env", "tags"):
        assert kw in create
    assert {"timeout", "env", "text"} <= set(inspect.signature(modal.Sandbox.exec).parameters)
    assert "wait" in inspect.signature(modal.Sandbox.terminate).parameters
    assert "tags" in inspect.signature(modal.Sandbox.list).parameters
    for name in ("ResourceExhaustedError", "AuthError", "SandboxTimeoutError", "SandboxTerminatedError"):
        assert hasattr(modal.exception, name)
