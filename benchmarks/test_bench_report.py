"""Report of a ~1,000,000-event simulated run: write_report against compute_metrics on the same trace (the report
adds plots and HTML on top of the metrics; ratio reported)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratios import baseline_median, median_of, ratio

from benchbed.metrics import compute_metrics
from benchbed.record import AdapterInfo, RunRecord, benchbed_info, machine_info
from benchbed.report import write_report
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec
from benchbed.trace import Trace

ROUNDS = 3


@pytest.fixture(scope="module")
def run(quick: bool) -> tuple[RunRecord, Trace]:
    steps = 380 if quick else 3_800
    workload = {"prompts_per_step": 16, "group_size": 16, "steps": steps, "max_staleness": 2}
    sim = {"mode": "async", "concurrency": 512, "train_step_time": 20.0, "latency": {"mean": 40.0, "cv": 0.6}}
    spec = build_spec({"name": "report-1m", "adapter": "sim", "workload": workload, "sim": sim})
    trace = simulate_spec(spec)
    record = RunRecord(
        status="succeeded", spec=spec.model_dump(mode="json"), spec_id=spec.spec_id,
        adapter=AdapterInfo(name="sim", framework=trace.meta.framework, mode=trace.meta.mode),
        benchbed=benchbed_info(), machine=machine_info(), metrics=compute_metrics(trace),
    )  # fmt: skip
    return record, trace


def test_compute_metrics(benchmark, run: tuple[RunRecord, Trace], medians: dict[str, float]) -> None:
    metrics = benchmark.pedantic(compute_metrics, args=(run[1],), rounds=ROUNDS, iterations=1)
    assert "trainer_idle_ratio" in metrics
    medians["compute_metrics"] = median_of(benchmark)


def test_write_report(benchmark, run: tuple[RunRecord, Trace], tmp_path: Path, medians: dict[str, float]) -> None:
    out = tmp_path / "report.html"
    benchmark.pedantic(write_report, args=([run], out), rounds=ROUNDS, iterations=1)
    assert out.stat().st_size > 10_000
    events = len(run[1].events)
    baseline = baseline_median(medians, "compute_metrics")
    ratio(f"report, {events:,} events", median_of(benchmark), "compute_metrics", baseline, None)
