"""Perfetto export of a ~1,000,000-event simulated run against writing the same trace as CSV (both turn every row
into text; ratio reported), and its memory: `benchbed export` as a child process against a child that only reads
the trace, so the difference is what the export holds beyond the trace (bounded by its chunks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ratios import baseline_median, median_of, ratio

from benchbed.export import export_perfetto, export_table
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec
from benchbed.trace import Trace

ROUNDS = 3
EXTRA_RSS_LIMIT = 1.5  # export child's peak RSS ÷ the read-only child's


@pytest.fixture(scope="module")
def trace(quick: bool) -> Trace:
    steps = 380 if quick else 3_800
    workload = {"prompts_per_step": 16, "group_size": 16, "steps": steps, "max_staleness": 2}
    sim = {"mode": "async", "concurrency": 512, "train_step_time": 20.0, "latency": {"mean": 40.0, "cv": 0.6}}
    return simulate_spec(build_spec({"name": "export-1m", "adapter": "sim", "workload": workload, "sim": sim}))


def test_csv_of_the_trace(benchmark, trace: Trace, tmp_path: Path, medians: dict[str, float]) -> None:
    out = tmp_path / "trace.csv"
    benchmark.pedantic(export_table, args=(trace, out, "csv"), rounds=ROUNDS, iterations=1)
    medians["trace as CSV"] = median_of(benchmark)


def test_perfetto_export(benchmark, trace: Trace, tmp_path: Path, medians: dict[str, float]) -> None:
    out = tmp_path / "trace.json"
    summary = benchmark.pedantic(export_perfetto, args=(trace, out), rounds=ROUNDS, iterations=1)
    with out.open() as fh:
        assert len(json.load(fh)["traceEvents"]) == sum(summary.events.values())
    baseline = baseline_median(medians, "trace as CSV")
    ratio(f"Perfetto export, {len(trace.events):,} events", median_of(benchmark), "trace as CSV", baseline, None)


def _peak_rss_mib(argv: list[str]) -> float:
    """Peak RSS of one child process (each child runs in its own grandchild so the figures do not mix)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", probe, *argv], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def test_export_memory_is_bounded(trace: Trace, tmp_path: Path) -> None:
    trace.write(tmp_path)
    read = f"from benchbed.trace import read_trace; read_trace({str(tmp_path)!r})"
    read_only = _peak_rss_mib([sys.executable, "-c", read])
    export = _peak_rss_mib([sys.executable, "-m", "benchbed", "export", str(tmp_path), "-o", str(tmp_path / "t.json")])
    ratio(f"export peak RSS ({export:.0f} MiB)", export, f"read trace only ({read_only:.0f} MiB)", read_only,
          EXTRA_RSS_LIMIT)  # fmt: skip
