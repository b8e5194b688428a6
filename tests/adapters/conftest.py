"""Shared by the adapter tests: `benchbed ingest ... --json` run as a user runs it (a subprocess), a fixture
generator script imported as a module, and a trace's rows in an order that does not depend on the tracker's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from benchbed.trace import Trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

Ingested = tuple[dict, dict[str, float]]


def _ingest(*args: object) -> Ingested:
    """The stored record `benchbed ingest ARGS --json` prints, and its metrics as name -> value."""
    done = subprocess.run([sys.executable, "-m", "benchbed", "ingest", *map(str, args), "--json"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    return record, {name: metric["value"] for name, metric in record["metrics"].items()}


@pytest.fixture
def ingest() -> Callable[..., Ingested]:
    return _ingest


def _load_generator(relative: str) -> ModuleType:
    """A fixture generator under tests/fixtures/ (e.g. "roll/make_fixtures.py") imported as a module."""
    name = "fixture_generator_" + relative.removesuffix(".py").replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, FIXTURES / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fixture_generator() -> Callable[[str], ModuleType]:
    return _load_generator


def _sorted_rows(trace: Trace) -> pd.DataFrame:
    """(key, step, value) rows sorted: W&B orders a step's keys anew on each write."""
    rows = trace.events[["key", "step", "value"]].astype({"key": str})
    return rows.sort_values(["key", "step", "value"]).reset_index(drop=True)


@pytest.fixture
def sorted_rows() -> Callable[[Trace], pd.DataFrame]:
    return _sorted_rows
