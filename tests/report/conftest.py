"""Report test fixtures: small simulated runs with their records, and hand-built traces (as fixtures, so the
helpers work under any pytest import mode)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchbed.adapter import get_adapter
from benchbed.metrics import compute_metrics
from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec
from benchbed.trace import Trace, TraceBuilder, TraceMeta

MACHINE = MachineInfo(name="test", host="test", os="Linux", cpu="cpu", cpu_count=1, python="3.11")


def _make_record(
    trace: Trace, metrics: dict[str, MetricValue], name: str = "run", status: str = "succeeded", **fields: Any
) -> RunRecord:
    """A RunRecord for `trace` with the given metrics (fixed machine, so tests do not probe the host)."""
    return RunRecord(
        status=status,
        spec={"name": name, "adapter": trace.meta.adapter, "warmup_steps": 1},
        spec_id=f"{name}-0000",
        adapter=AdapterInfo(name=trace.meta.adapter, framework=trace.meta.framework, mode=trace.meta.mode),
        benchbed=BenchbedInfo(version="0.1.0"),
        machine=MACHINE,
        metrics=metrics,
        trace_events=len(trace.events),
        **fields,
    )


def _sim_run(name: str = "sim", steps: int = 8, **sim: Any) -> tuple[RunRecord, Trace]:
    """A small simulated async run with its computed metrics."""
    table = {"mode": "async", "concurrency": 64, "latency": {"dist": "lognormal", "mean": 30.0, "cv": 0.5},
             "train_step_time": 10.0, "pass_rate": {"dist": "beta", "a": 0.5, "b": 0.5}, **sim}  # fmt: skip
    workload = {"prompts_per_step": 2, "group_size": 8, "steps": steps, "max_staleness": 1}
    spec = build_spec({"name": name, "adapter": "sim", "workload": workload, "sim": table})
    trace = simulate_spec(spec)
    record = _make_record(trace, compute_metrics(trace), name=name)
    return record.model_copy(update={"spec": spec.model_dump(mode="json"), "spec_id": spec.spec_id}), trace


def _build(rows: list[tuple[str, str, dict[str, Any]]], **meta: Any) -> Trace:
    """A trace from (key, kind, fields) rows; kind is span/point/agg as in TraceBuilder."""
    builder = TraceBuilder()
    for key, kind, fields in rows:
        builder.add(key, kind, **fields)
    return builder.build(TraceMeta(adapter=meta.pop("adapter", "test"), **meta)).validate()


@pytest.fixture(scope="session")
def sim_pair() -> tuple[RunRecord, Trace]:
    """A small simulated async run and its record (computed once per session)."""
    return _sim_run()


@pytest.fixture
def build() -> Callable[..., Trace]:
    """Build a trace from (key, kind, fields) rows."""
    return _build


@pytest.fixture
def make_record() -> Callable[..., RunRecord]:
    """Make a RunRecord for a trace and metrics."""
    return _make_record


@pytest.fixture
def sim_run() -> Callable[..., tuple[RunRecord, Trace]]:
    """Simulate a small run: sim_run(name, steps, **sim_table)."""
    return _sim_run


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FRAMEWORK_FIXTURES = (("verl", "verl/verl-0.9.1-v1_sync"), ("slime", "slime/fully_async_swe"),
                      ("prime_rl", "prime_rl/head-559b447"))  # fmt: skip
# One run per framework adapter (asynchronous where the fixtures have one): the README's comparison of the thirteen
# frameworks (docs/guides/compare.md)
ALL_FRAMEWORKS = (("verl", "verl/verl-0.9.1-fully_async"), ("slime", "slime/fully_async_swe"),
                  ("prime_rl", "prime_rl/head-559b447"), ("trl", "trl/grpo-spg2-sandbox"),
                  ("areal", "areal/grpo-async-6x8"), ("nemo_rl", "nemo_rl/async-6-steps"),
                  ("skyrl", "skyrl/fully-async-6-steps"), ("openrlhf", "openrlhf/async-3c3be62"),
                  ("roll", "roll/async-8eb27cc"), ("open_instruct", "open_instruct/async-6-steps"),
                  ("rllm", "rllm/fully-async-6-steps"), ("miles", "miles/fully-async-5-steps"),
                  ("tinker_cookbook", "tinker_cookbook/sync-4-steps"))  # fmt: skip


def _fixture_run(adapter: str, fixture: str) -> tuple[RunRecord, Trace]:
    """A framework's fixture parsed and measured as `benchbed ingest` would (no resources known)."""
    trace = get_adapter(adapter).parse(FIXTURES / fixture)
    name = fixture.split("/")[-1]
    record = _make_record(trace, compute_metrics(trace), name=name)
    adapter_info = record.adapter.model_copy(update={"version": trace.meta.framework_version})
    return record.model_copy(update={"adapter": adapter_info}), trace


def _matrix_run(concurrency: int, seed: int) -> tuple[RunRecord, Trace]:
    """One repeat of a simulated matrix point; repeats share the spec (and spec_id) and differ in their seed."""
    table = {"mode": "async", "concurrency": concurrency, "latency": {"dist": "lognormal", "mean": 30.0, "cv": 0.5},
             "train_step_time": 10.0, "pass_rate": {"dist": "beta", "a": 0.5, "b": 0.5}}  # fmt: skip
    data = {"name": "sweep", "adapter": "sim", "variant": {"sim.concurrency": concurrency},
            "workload": {"prompts_per_step": 2, "group_size": 8, "steps": 10, "max_staleness": 1},
            "resources": {"trainer_gpus": 2, "generator_gpus": 6}}  # fmt: skip
    spec = build_spec({**data, "sim": table})
    trace = simulate_spec(build_spec({**data, "sim": {**table, "seed": seed}}))
    record = _make_record(trace, compute_metrics(trace), name="sweep")
    return record.model_copy(update={"spec": spec.model_dump(mode="json"), "spec_id": spec.spec_id}), trace


@pytest.fixture(scope="session")
def framework_runs() -> list[tuple[RunRecord, Trace]]:
    """One fixture run of each framework adapter, parsed and measured as `benchbed ingest` would."""
    return [_fixture_run(adapter, fixture) for adapter, fixture in ALL_FRAMEWORKS]


@pytest.fixture(scope="session")
def comparison_runs() -> list[tuple[RunRecord, Trace]]:
    """The three frameworks' fixture runs and a simulated concurrency sweep with two repeats per point."""
    runs = [_fixture_run(adapter, fixture) for adapter, fixture in FRAMEWORK_FIXTURES]
    runs += [_matrix_run(c, seed) for c in (16, 48) for seed in (0, 1)]
    return runs
