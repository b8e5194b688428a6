"""Shared by the adapter tests: `benchbed ingest ... --json` run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

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
