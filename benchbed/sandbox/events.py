"""Timed sandbox lifecycle events and their conversion into sandbox.queue/start/exec/stop trace spans."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from benchbed.keys import SANDBOX_EXEC, SANDBOX_FAILURE_REASONS, SANDBOX_QUEUE, SANDBOX_START, SANDBOX_STOP
from benchbed.trace import TraceBuilder, attrs_json


class Ev(str, Enum):
    REQUESTED = "requested"
    ADMITTED = "admitted"
    CREATE_SENT = "create_sent"
    STARTED = "started"
    READY = "ready"
    EXEC_START = "exec_start"
    EXEC_END = "exec_end"
    FAILED = "failed"
    TERMINATE_REQUESTED = "terminate_requested"
    TERMINATED = "terminated"


@dataclass(slots=True)
class SandboxEvent:
    key: str
    ev: Ev
    t: float
    attempt: int = 0
    reason: str | None = None
    attrs: dict[str, Any] | None = None


@dataclass
class EventSink:
    """Append-only list of events stamped with one monotonic clock; t is seconds since the sink was made."""

    clock: Callable[[], float] = time.perf_counter
    events: list[SandboxEvent] = field(default_factory=list)
    origin: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.origin = self.clock()

    def now(self) -> float:
        return self.clock() - self.origin

    def emit(
        self, key: str, ev: Ev, *, attempt: int = 0, reason: str | None = None, attrs: dict[str, Any] | None = None
    ) -> float:
        t = self.clock() - self.origin
        self.events.append(SandboxEvent(key, ev, t, attempt, reason, attrs))
        return t


# An exec and a stop are each one span from the event that opens it to the one that closes it.
_OPENS = {Ev.EXEC_START: "exec", Ev.TERMINATE_REQUESTED: "stop"}
_CLOSES = {Ev.EXEC_END: ("exec", SANDBOX_EXEC), Ev.TERMINATED: ("stop", SANDBOX_STOP)}


def _status(reason: str | None) -> str:
    if reason is None:
        return "ok"
    return reason if reason in SANDBOX_FAILURE_REASONS else "internal"


def add_spans(
    builder: TraceBuilder, events: Iterable[SandboxEvent], attrs_of: Callable[[str], dict[str, Any]] | None = None
) -> int:
    """Pair events per sandbox key into spans: queue (requested->admitted), start (admitted->ready|failed),
    exec (exec_start->exec_end), stop (terminate_requested->terminated). Returns the number of spans added."""
    open_: dict[tuple[str, str], SandboxEvent] = {}
    extra: dict[str, dict[str, Any]] = {}
    added = 0

    def base(key: str) -> dict[str, Any]:
        if key not in extra:
            extra[key] = dict(attrs_of(key)) if attrs_of else {}
        return extra[key]

    def span(trace_key: str, first: SandboxEvent, last: SandboxEvent, status: str, attrs: dict[str, Any]) -> None:
        nonlocal added
        merged = {**base(first.key), "attempt": first.attempt, **(first.attrs or {}), **attrs}
        builder.span(
            trace_key, first.t, max(last.t, first.t), actor="sandbox", sample=first.key, status=status,
            value=max(last.t - first.t, 0.0), attrs=attrs_json(merged),
        )  # fmt: skip
        added += 1

    for e in events:
        k = e.key
        if e.ev is Ev.REQUESTED:
            open_[(k, "queue")] = e
        elif e.ev is Ev.ADMITTED:
            first = open_.pop((k, "queue"), None)
            if first is not None:
                span(SANDBOX_QUEUE, first, e, "ok", {})
            open_[(k, "start")] = e
        elif e.ev in (Ev.CREATE_SENT, Ev.STARTED):
            start = open_.get((k, "start"))
            if start is not None:
                start.attrs = {**(start.attrs or {}), f"{e.ev.value}_s": round(e.t - start.t, 6), **(e.attrs or {})}
        elif e.ev is Ev.READY:
            first = open_.pop((k, "start"), None)
            if first is not None:
                span(SANDBOX_START, first, e, "ok", e.attrs or {})
        elif e.ev is Ev.FAILED:
            queued = open_.pop((k, "queue"), None)
            if queued is not None:  # gave up waiting for admission: the wait is a queue span, the failure a start
                span(SANDBOX_QUEUE, queued, e, _status(e.reason), {})
            first = open_.pop((k, "start"), None) or queued
            if first is queued and (e.attrs or {}).get("cancelled"):
                continue  # the caller withdrew the request before it was admitted: no start attempt
            if first is not None:
                span(SANDBOX_START, e if first is queued else first, e, _status(e.reason), e.attrs or {})
        elif e.ev in _OPENS:
            open_[(k, _OPENS[e.ev])] = e
        elif e.ev in _CLOSES:
            kind, trace_key = _CLOSES[e.ev]
            first = open_.pop((k, kind), None)
            if first is not None:
                span(trace_key, first, e, _status(e.reason) if e.reason else "ok", e.attrs or {})
    return added


def phase_durations(events: Iterable[SandboxEvent], key: str) -> dict[str, float]:
    """Seconds spent per phase (queue, start, exec, stop) by one sandbox, summed over attempts and execs."""
    builder = TraceBuilder()
    add_spans(builder, [e for e in events if e.key == key])
    out: dict[str, float] = {}
    for trace_key, t0, t1 in zip(builder.column("key"), builder.column("t0"), builder.column("t1"), strict=True):
        name = trace_key.split(".", 1)[1] + "_s"
        out[name] = round(out.get(name, 0.0) + (t1 - t0), 6)
    return out
