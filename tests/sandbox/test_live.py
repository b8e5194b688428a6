"""Opt-in live tests against the real providers; they run only when the provider's credentials are set."""

from __future__ import annotations

import asyncio
import os

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink
from benchbed.sandbox.pool import PoolConfig, SandboxPool
from benchbed.sandbox.registry import get_backend

pytestmark = pytest.mark.live


def _roundtrip(backend_name: str, image: str | None) -> None:
    async def main():
        backend = get_backend(backend_name)
        async with SandboxPool(backend, PoolConfig(max_starting=2, start_timeout_s=300), EventSink()) as pool:
            outs = await asyncio.gather(*(pool.run(SandboxSpec(image=image), ["python3", "-c", "print(6*7)"])
                                          for _ in range(2)))  # fmt: skip
            timeout = await pool.run(SandboxSpec(image=image), ["sleep", "60"], timeout_s=3)
        return outs, timeout

    outs, timeout = asyncio.run(main())
    for out in outs:
        assert out.reason is None and out.result.stdout.strip() == b"42", out
    assert timeout.result.reason == "exec_timeout"


@pytest.mark.skipif(not os.environ.get("MODAL_TOKEN_ID"), reason="MODAL_TOKEN_ID not set")
def test_modal_live():
    pytest.importorskip("modal")
    _roundtrip("modal", "python:3.11-slim")


@pytest.mark.skipif(not os.environ.get("PRIME_API_KEY"), reason="PRIME_API_KEY not set")
def test_prime_live():
    pytest.importorskip("prime_sandboxes")
    _roundtrip("prime", "python:3.11-slim")
