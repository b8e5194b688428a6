"""Progress of long file reads, reported to whoever listens (the CLI's progress bar on a terminal); silent when
nobody does. The library reports; only the CLI draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# (what is read, bytes read so far, bytes in all)
Listener = Callable[[str, int, int], None]
_LISTENER: ContextVar[Listener | None] = ContextVar("benchbed_read_progress", default=None)
EVERY = 4 << 20  # bytes between two reports: a bar moves smoothly and a read pays nothing measurable


@contextmanager
def reporting(listener: Listener) -> Iterator[None]:
    """Send every long read's progress inside the block to `listener`."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def listener() -> Listener | None:
    """The listener of the current context, if any: readers ask once, before their loop."""
    return _LISTENER.get()
