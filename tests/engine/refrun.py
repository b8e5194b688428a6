"""Helpers for the reference engine tests: real runs through benchbed's pipeline (spec, launch, parse, metrics)."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchbed.pipeline import execute
from benchbed.record import RunRecord
from benchbed.spec import build_spec
from benchbed.store import Store, read_record
from benchbed.trace import Trace, read_trace

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RefRun:
    """One finished engine run: benchbed's record and trace, and the engine's own log and summary."""

    run_dir: Path
    record: RunRecord
    trace: Trace
    events: list[dict[str, Any]]
    summary: dict[str, Any]

    def native(self, ev: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["ev"] == ev]

    def metric(self, name: str) -> float:
        return self.record.metrics[name].value


def engine_available() -> None:
    """Skip (outside CI) when the ref extra or the local sandbox is missing; in CI both must be there."""
    missing = [m for m in ("torch", "transformers", "tokenizers") if importlib.util.find_spec(m) is None]
    reason = f"the ref extra is not installed ({', '.join(missing)})" if missing else None
    if reason is None:
        from benchbed.sandbox.capabilities import SandboxUnavailable, detect

        try:
            detect()
        except SandboxUnavailable as exc:
            reason = f"local sandbox unavailable here: {exc}"
    if reason is not None:
        if os.environ.get("CI"):
            raise RuntimeError(reason)
        pytest.skip(reason)


def run_ref(tmp_path_factory: pytest.TempPathFactory, name: str, workload: dict[str, Any],
            ref: dict[str, Any]) -> RefRun:  # fmt: skip
    """Launch the engine for a spec made of `workload` and `ref`, as `benchbed run` would."""
    engine_available()
    data = {"name": name, "adapter": "ref", "warmup_steps": 1, "timeout_s": 400,
            "workload": {"prompts_per_step": 2, "group_size": 4, **workload}, "ref": ref}  # fmt: skip
    store = Store(tmp_path_factory.mktemp(name))
    outcome = execute(build_spec(data, f"<{name}>"), store)
    assert outcome.trace is not None, outcome.record.error
    return load_run(outcome.run_dir)


def load_run(run_dir: Path) -> RefRun:
    """A stored ref run: benchbed's record and trace beside the engine's native log and summary."""
    events = []
    for file in sorted((run_dir / "events").glob("*.jsonl")):
        events += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    summary = json.loads((run_dir / "summary.json").read_text())
    return RefRun(run_dir, read_record(run_dir), read_trace(run_dir), events, summary)
