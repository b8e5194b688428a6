"""The engine's native event log: one JSONL file per process under events/, one flushed line per event.

Every event has `ev` (its type), `t` (epoch seconds, time.time()) and `role` (orchestrator, trainer, gen0 …).
The `ref` adapter reads these files; the engine never writes benchbed's trace itself."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

EVENTS_DIRNAME = "events"
SUMMARY_FILENAME = "summary.json"


class EventLog:
    """Append-only JSONL writer for one process, line-buffered so a crash loses at most the event being written."""

    def __init__(self, run_dir: Path, role: str) -> None:
        self.role = role
        directory = Path(run_dir) / EVENTS_DIRNAME
        directory.mkdir(parents=True, exist_ok=True)
        self._fh = (directory / f"{role}.jsonl").open("a", buffering=1)

    def write(self, ev: str, t: float | None = None, **fields: Any) -> None:
        record = {"ev": ev, "t": time.time() if t is None else t, "role": self.role, **fields}
        self._fh.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._fh.close()
