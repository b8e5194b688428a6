"""SIGTERM and SIGHUP take the same path as Ctrl-C, so every launcher stops what it started and finalises the
record: `timeout`, `kill`, Slurm and container runtimes stop a process with SIGTERM, a closed terminal with SIGHUP."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """A stop signal other than SIGINT, raised in the main thread like KeyboardInterrupt; names the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_name(exc: BaseException) -> str:
    """'SIGTERM', 'SIGHUP' or 'SIGINT' (Ctrl-C) for an interrupt raised by `stop_signals_interrupt`."""
    return signal.Signals(exc.signum).name if isinstance(exc, Terminated) else "SIGINT"


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main thread; the
    previous handlers come back afterwards. Outside the main thread (where handlers cannot be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Inside the block SIGINT, SIGTERM and SIGHUP are held, not raised, so a record write is never cut short; the
    first one held is raised (KeyboardInterrupt or Terminated) when the block ends. Outside the main thread it
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum))
                for sig in (signal.SIGINT, *STOP_SIGNALS)}  # fmt: skip
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if held:
        raise KeyboardInterrupt() if held[0] == signal.SIGINT else Terminated(held[0])


def interrupt_for(name: str) -> KeyboardInterrupt:
    """The exception to re-raise once a launch stopped by `name` ('SIGINT', 'SIGTERM', ...) is finalised."""
    return KeyboardInterrupt() if name in ("", "SIGINT") else Terminated(signal.Signals[name].value)
