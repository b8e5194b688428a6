"""Prime backend against a fake client: labels, wait_for_creation budget, failure mapping, bulk_delete sweeps."""

from __future__ import annotations

import asyncio
import inspect
from types import SimpleNamespace

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import Ev, EventSink
from benchbed.sandbox.pool import PoolConfig, SandboxPool
from benchbed.sandbox.prime_backend import PrimeBackend, classify, creation_attempts

from . import fakes

pytest.importorskip("prime_sandboxes")


def make(client=None) -> PrimeBackend:
    return PrimeBackend(sdk=fakes.fake_prime_sdk(), client=client or fakes.FakePrimeClient(), run_id="r1")


def test_create_exec_close_with_labels():
    backend = make()
    client = backend.client
    events = EventSink()

    async def main():
        async with SandboxPool(backend, PoolConfig(), events) as pool:
            return await pool.run(SandboxSpec(memory_mb=2048, lifetime_s=90), ["echo", "a b"], key="k")

    out = asyncio.run(main())
    assert out.result.ok and out.result.stdout == b"hi\n"
    request = client.created["prime-1"]
    assert "benchbed-run-r1" in request.labels and request.memory_gb == 2.0 and request.timeout_minutes == 2
    assert request.network_allowlist == [] and request.idempotency_key == "r1-k"
    assert client.deleted[0] == "prime-1"
    assert Ev.STARTED in [e.ev for e in events.events]


def test_wait_for_creation_budget_fits_the_deadline():
    assert creation_attempts(3) == 3
    assert creation_attempts(115) == 60  # the SDK default's budget
    client = fakes.FakePrimeClient()

    async def main():
        backend = make(client)
        handle = await backend.create(SandboxSpec(), key="k", deadline_s=25, on_step=lambda s: None)
        await backend.close(handle)

    asyncio.run(main())
    assert client.waits[0] <= creation_attempts(25)


def test_rate_limit_retried_image_pull_not():
    client = fakes.FakePrimeClient()
    client.create_errors = [fakes.APIError("HTTP 429: too many requests")]
    backend = make(client)

    async def main():
        async with SandboxPool(backend, PoolConfig(retries=1, backoff_s=0)) as pool:
            ok = await pool.run(SandboxSpec(), ["true"])
            client.wait_errors = [fakes.SandboxImagePullError("pull failed")]
            bad = await pool.run(SandboxSpec(), ["true"])
            return ok, bad

    ok, bad = asyncio.run(main())
    assert ok.reason is None
    assert bad.reason == "image_error"
    assert "prime-2" in client.deleted  # the half-created sandbox was deleted


def test_exec_failures_and_output_cap():
    client = fakes.FakePrimeClient()
    client.exec_results = [fakes.CommandTimeoutError("timed out"),
                           SimpleNamespace(stdout="x" * 50, stderr="", exit_code=0)]  # fmt: skip
    backend = make(client)

    async def main():
        h = await backend.create(SandboxSpec(output_limit_bytes=10), key="k", deadline_s=5, on_step=lambda s: None)
        a = await backend.exec(h, ["sleep", "100"], timeout_s=1)
        b = await backend.exec(h, ["yes"], timeout_s=1)
        await backend.close(h)
        return a, b

    a, b = asyncio.run(main())
    assert a.reason == "exec_timeout"
    assert b.limit == "output" and b.stdout == b"x" * 10


def test_sweeps_with_bulk_delete():
    client = fakes.FakePrimeClient()
    backend = make(client)
    orphan_labels = ["benchbed", "benchbed-run-old", f"benchbed-host-{backend.host}", "benchbed-pid-999999999"]
    client.created["old-1"] = SimpleNamespace(labels=orphan_labels)

    async def main():
        started = await backend.sweep()
        await backend.create(SandboxSpec(), key="k", deadline_s=5, on_step=lambda s: None)
        final = await backend.sweep(final=True)
        return started, final

    started, final = asyncio.run(main())
    assert started == 1 and client.bulk[0] == {"sandbox_ids": ["old-1"], "labels": None}
    assert final == 1 and client.bulk[1]["labels"] == ["benchbed-run-r1"]


@pytest.mark.parametrize(
    ("exc", "reason"),
    [(fakes.APIError("HTTP 429: slow down"), "rate_limited"), (fakes.APIError("HTTP 503: busy"), "no_capacity"),
     (fakes.UnauthorizedError("API key unauthorized. Check PRIME_API_KEY."), "auth"),
     (fakes.SandboxOOMError("oom"), "oom"), (fakes.SandboxNotRunningError("gone"), "lost"),
     (fakes.APIError("HTTP 500: boom"), "internal"), (fakes.APIError("HTTP 402: Payment Required"), "auth"),
     (fakes.APIError("HTTP 400: failed to pull image python:9"), "image_error")],
)  # fmt: skip
def test_classify(exc, reason):
    assert classify(exc) == reason


def test_real_sdk_has_the_calls_we_make():
    ps = pytest.importorskip("prime_sandboxes")
    client = ps.AsyncSandboxClient
    assert {"max_attempts"} <= set(inspect.signature(client.wait_for_creation).parameters)
    assert {"env", "timeout"} <= set(inspect.signature(client.execute_command).parameters)
    assert {"labels", "sandbox_ids"} <= set(inspect.signature(client.bulk_delete).parameters)
    assert {"labels", "exclude_terminated", "page", "per_page"} <= set(inspect.signature(client.list).parameters)
    for name in ("SandboxOOMError", "SandboxImagePullError", "CommandTimeoutError", "UnauthorizedError"):
        assert hasattr(ps, name)
