"""Live readers: the new lines of a run's files turned into LiveFigures observations, per adapter.

A reader follows the same files its adapter's `parse` reads and the same fields of them (cited per reader), so
the live figures and the final ones describe one run; the final figures themselves are the adapter's."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchbed.engine.eventlog import EVENTS_DIRNAME
from benchbed.errors import AdapterError, BenchbedError
from benchbed.sandbox.events import Ev
from benchbed.watch.live import LiveFigures
from benchbed.watch.tail import DirTail


@dataclass
class RefReader:
    """The reference engine's event log (`events/*.jsonl`, one JSON object per line, benchbed.engine.eventlog):
    `step` events (step_s, wait_s, samples), `batch` (staleness), `group` (reward_std, status), `rollout`
    (tokens against max_new_tokens), `sandbox` (ready or failed), and `run_end`."""

    run_dir: Path
    figures: LiveFigures
    framework: str = "benchbed-ref"
    warnings: list[str] = field(default_factory=list)
    max_new_tokens: int | None = None
    _tail: DirTail = field(init=False)

    def __post_init__(self) -> None:
        self._tail = DirTail(Path(self.run_dir) / EVENTS_DIRNAME, "*.jsonl")

    def update(self, now: float) -> int:
        """Read what was appended since the last update; the number of new lines. The new events of all files
        are handled in the order of their timestamps, so a step is credited with what happened before it."""
        count = 0
        events: list[tuple[float, int, str, dict[str, Any]]] = []
        for name, lines in self._tail.read().items():
            for line in lines:
                count += 1
                event = self._decode(name, line) if line.strip() else None
                if event is not None:
                    t = event.get("t")
                    events.append((float(t) if isinstance(t, int | float) else math.inf, len(events), name, event))
        for _, _, name, event in sorted(events, key=lambda item: item[:2]):
            self._event(name, event, now)
        return count

    def _decode(self, name: str, line: str) -> dict[str, Any] | None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            self.warnings.append(f"{EVENTS_DIRNAME}/{name}: a line that is not JSON (the final parse names it)")
            return None
        return event if isinstance(event, dict) else None

    def _event(self, name: str, event: dict[str, Any], now: float) -> None:
        handler = HANDLERS.get(str(event.get("ev")))
        if handler is not None:
            try:
                handler(self, event, now)
            except (KeyError, TypeError, ValueError):
                self.warnings.append(f"{EVENTS_DIRNAME}/{name}: a {event.get('ev')} event without its fields")

    @property
    def resets(self) -> int:
        """Truncations and rotations of the event files seen so far."""
        return self._tail.resets

    def close(self) -> None:
        """Release the followed files."""
        self._tail.close()


def _run_start(reader: RefReader, e: dict[str, Any], now: float) -> None:
    config = e.get("config") or {}
    reader.max_new_tokens = (config.get("ref") or {}).get("max_new_tokens")
    bound = config.get("max_staleness")
    reader.figures.staleness_bound = float(bound) if isinstance(bound, int | float) else None
    steps = config.get("steps")
    reader.figures.total_steps = steps if isinstance(steps, int) else None
    concurrency = e.get("concurrency")  # the generator slots the engine reports (trace meta.concurrency)
    reader.figures.concurrency = concurrency if isinstance(concurrency, int) and concurrency > 0 else None


def _step(reader: RefReader, e: dict[str, Any], now: float) -> None:
    step_s = float(e["t1"]) - float(e["t0"])  # the trainer.step span adapters.ref.parse.emit_trainer writes
    wait_end, wait_s = float(e["t_wait_end"]), float(e["wait_s"])
    wait = wait_end - max(float(e["t0"]), wait_end - wait_s)
    span = (float(e["t0"]), float(e["t1"]))
    reader.figures.step(int(e["step"]), step_s, wait, int(e.get("samples", 0)), now, span)


def _batch(reader: RefReader, e: dict[str, Any], now: float) -> None:
    reader.figures.staleness([float(v) for v in e["staleness"]])


def _group(reader: RefReader, e: dict[str, Any], now: float) -> None:
    std = e.get("reward_std")
    if isinstance(std, int | float) and math.isfinite(std):
        reader.figures.group(std == 0 or e.get("status") == "filtered_zero_adv")


def _rollout(reader: RefReader, e: dict[str, Any], now: float) -> None:
    t1 = e.get("t1")  # every rollout holds a slot from t0 to t1 (the event's time when t1 is missing), as parse has it
    t1 = float(t1) if isinstance(t1, int | float) and math.isfinite(t1) else float(e["t"])
    reader.figures.busy.span(float(e["t0"]), max(t1, float(e["t0"])))
    if e.get("status") == "done":
        limit = reader.max_new_tokens
        reader.figures.rollout(limit is not None and int(e.get("tokens", 0)) >= limit)


def _sandbox(reader: RefReader, e: dict[str, Any], now: float) -> None:
    if e["step"] in (Ev.READY.value, Ev.FAILED.value):
        reader.figures.sandbox_start(e["step"] == Ev.READY.value)


def _run_end(reader: RefReader, e: dict[str, Any], now: float) -> None:
    reader.figures.ended = True


HANDLERS: dict[str, Callable[[RefReader, dict[str, Any], float], None]] = {
    "run_start": _run_start, "step": _step, "batch": _batch, "group": _group, "rollout": _rollout,
    "sandbox": _sandbox, "run_end": _run_end,
}  # fmt: skip


class LiveReader(Protocol):
    """What `benchbed watch` asks of a live reader: read the appended bytes into its LiveFigures, say what it could
    not read, release its files."""

    framework: str
    warnings: list[str]

    def update(self, now: float) -> int: ...

    @property
    def resets(self) -> int: ...

    def close(self) -> None: ...


# The readers of the core's own files; an adapter's own reader is the `live_reader` it declares (Adapter.live_reader).
READERS: dict[str, Callable[[Path, LiveFigures], LiveReader]] = {"ref": RefReader}


def reader_of(adapter: str) -> Callable[[Path, LiveFigures], LiveReader] | None:
    """What builds `adapter`'s live reader: the core's, else the one the adapter declares; None when it has none."""
    if adapter in READERS:
        return READERS[adapter]
    from benchbed.adapter import get_adapter

    try:
        return get_adapter(adapter).live_reader()
    except AdapterError:
        return None


def watchable() -> list[str]:
    """The adapters whose runs can be followed live."""
    from benchbed.adapter import available_adapters

    return sorted(set(READERS) | {name for name in available_adapters() if reader_of(name) is not None})


def _builder(adapter: str, where: str | Path) -> Callable[[Path, LiveFigures], LiveReader]:
    build = reader_of(adapter)
    if build is None:
        raise BenchbedError(
            f"{where}: benchbed watch follows {', '.join(watchable())} runs live; the {adapter} adapter's "
            "files are read once the run ends (benchbed ingest)"
        )
    return build


def check_watchable(adapter: str, where: str | Path) -> None:
    """Refuse, in one line naming `where`, an adapter whose files have no live reader (before anything launches)."""
    _builder(adapter, where)


def live_reader(adapter: str, run_dir: Path, figures: LiveFigures) -> LiveReader:
    """The live reader of `adapter`'s files; a clear error naming the adapters that have one."""
    return _builder(adapter, run_dir)(Path(run_dir), figures)
