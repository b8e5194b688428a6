"""Sandboxes whose creation we stopped waiting for (a deadline passed, the caller was cancelled): each is closed as
soon as its creation lands, so that none is left running and billing; shutdown waits a bounded time for them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any


class LateCloses:
    """The closes still pending for creations that landed late, one task each."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def close_when_done(self, create: asyncio.Future[Any], close: Callable[[Any], Awaitable[object]]) -> None:
        """Once `create` lands, `close` what it made; a creation or close that fails leaves nothing to close."""

        async def later() -> None:
            with contextlib.suppress(Exception):
                await close(await create)

        task = asyncio.ensure_future(later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the pending closes."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=timeout_s)
