"""Shared machinery for `make bench`: inputs written once per session, and a table of target/baseline ratios.

Every benchmark measures its baseline in the same run; `ratio` records target ÷ baseline and fails the test when
it misses the limit. The table is printed at the end of the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the benchmarks import workloads.py and minimal_des.py

from ratios import RATIOS  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--bench-quick", action="store_true", help="smaller inputs (a smoke run; ratios less stable)")
    parser.addoption(
        "--memory-steps", type=int, default=None, help="steps of the memory benchmark's verl JSONL (default 100,000)"
    )


@pytest.fixture(scope="session")
def quick(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--bench-quick"))


@pytest.fixture(scope="session")
def medians() -> dict[str, float]:
    """Median seconds of each benchmark already run in this session, by name, for the ratios."""
    return {}


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not RATIOS:
        return
    tr = terminalreporter
    tr.section("benchbed ratios (target ÷ baseline, same run)")
    tr.write_line(f"{'benchmark':46s} {'median s':>9s}  {'baseline':40s} {'median s':>9s} {'ratio':>7s} {'limit':>6s}")
    for r in RATIOS:
        limit = "-" if r.limit is None else f"{r.limit:.2f}"
        tr.write_line(f"{r.name:46s} {r.target_s:9.4f}  {r.baseline:40s} {r.baseline_s:9.4f} {r.value:6.2f}x "
                      f"{limit:>6s}  {r.verdict}")  # fmt: skip
