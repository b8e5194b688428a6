"""Fixtures for report tests."""

from __future__ import annotations

import pytest
from report_helpers import sim_run

from benchbed.record import RunRecord
from benchbed.trace import Trace


@pytest.fixture(scope="session")
def sim_pair() -> tuple[RunRecord, Trace]:
    """A small simulated async run and its record (computed once per session)."""
    return sim_run()
