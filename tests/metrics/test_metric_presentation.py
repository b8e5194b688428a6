"""The metric registry is the one source of a metric's presentation: family, order, headline, `ls` columns."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchbed.errors import BenchbedError
from benchbed.metrics import METRICS
from benchbed.metrics.registry import (
    FAMILIES,
    PRESENTATION,
    display_order,
    family_of,
    headline_metrics,
    listed_columns,
    metric,
    metric_variants,
)
from benchbed.nightly.stats import DEFAULT_WATCH
from benchbed.report.tables import metric_rows

PACKAGE = Path(__file__).resolve().parents[2] / "benchbed"


def test_every_registered_metric_is_presented_and_nothing_else():
    assert set(PRESENTATION) == set(METRICS)
    assert all(p.family in FAMILIES for p in PRESENTATION.values())
    with pytest.raises(BenchbedError, match="has no presentation"):
        metric("not_presented", "ratio", "")(lambda ctx: None)


def test_a_metric_family_is_one_function_with_an_argument_per_variant():
    assert (METRICS["staleness_p99"].unit, METRICS["sandbox_queue_p50_s"].unit) == ("versions", "s")
    assert METRICS["reward_gain"].description.startswith("final_reward_mean minus the mean training reward")
    with pytest.raises(BenchbedError, match="'trainer_idle_ratio' registered twice"):
        metric_variants("ratio", lambda ctx, key: (1.0, key), {"trainer_idle_ratio": ("again", "x")})


def test_headline_watch_and_columns_come_from_the_registry():
    assert headline_metrics()[:3] == ("trainer_idle_ratio", "step_time_mean_s", "generator_utilization")
    assert "rate_gap" in headline_metrics() and "rate_gap" not in headline_metrics(directed=True)
    assert headline_metrics(directed=True) == DEFAULT_WATCH
    assert listed_columns() == {"trainer_idle_ratio": "idle", "trainer_throughput_sps": "train sps",
                                "staleness_mean": "stale"}  # fmt: skip


def test_families_and_order_for_known_and_unknown_names():
    assert family_of("staleness_max") == "staleness" and family_of("sandbox_custom_s") == "sandbox"
    assert family_of("cost_per_step") == "other" and family_of("made_up") == "other"
    names = ["cost_per_step", "staleness_max", "trainer_idle_ratio", "staleness_mean", "zzz", "sandbox_zzz"]
    assert sorted(names, key=display_order) == ["trainer_idle_ratio", "staleness_mean", "staleness_max",
                                                "sandbox_zzz", "cost_per_step", "zzz"]  # fmt: skip


def test_report_tables_follow_the_registry(sim_record):
    rows = metric_rows([sim_record])
    assert [r.name for r in rows] == sorted((r.name for r in rows), key=display_order)
    assert all(r.family == family_of(r.name) for r in rows)


def test_no_module_keeps_its_own_list_of_metric_names():
    """A tuple, list or set literal naming three or more registered metrics outside the registry is a hand-written
    list that would drift from it. The diagnosis rules name the metrics each rule reads: inputs, not a display."""
    exempt = {"metrics/registry.py", "diagnosis/rules.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if str(path.relative_to(PACKAGE)) in exempt:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in METRICS]
                if len(names) >= 3:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {names}")
    assert offenders == []


@pytest.fixture(scope="module")
def sim_record():
    from benchbed.metrics import compute_metrics
    from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, RunRecord
    from benchbed.sim import simulate_spec
    from benchbed.spec import build_spec

    spec = build_spec({"name": "p", "adapter": "sim", "workload": {"prompts_per_step": 2, "group_size": 4, "steps": 5},
                       "sim": {"mode": "async", "concurrency": 8}})  # fmt: skip
    machine = MachineInfo(name="t", host="t", os="Linux", cpu="c", cpu_count=1, python="3.11")
    return RunRecord(status="succeeded", spec={"name": "p"}, spec_id="p-1", adapter=AdapterInfo(name="sim"),
                     benchbed=BenchbedInfo(version="0"), machine=machine,
                     metrics=compute_metrics(simulate_spec(spec)))  # fmt: skip
