"""Run grouping, median intervals, per-GPU figures, what differs and matrix curves (benchbed.report.run_groups)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord
from benchbed.report.run_groups import (
    aggregate,
    gpu_count,
    group_runs,
    matrix_axes,
    matrix_curves,
    median_interval,
    metric_values,
    what_differs,
)  # fmt: skip

MACHINE = MachineInfo(name="m", host="m", os="Linux", cpu="cpu", cpu_count=1, python="3.11")


def record(spec_id: str = "a-1", adapter: str = "sim", mode: str = "async", version: str = "",
           spec: dict[str, Any] | None = None, **metrics: float) -> RunRecord:  # fmt: skip
    units = {"trainer_throughput_sps": "samples/s", "output_tokens_per_s": "tokens/s"}
    return RunRecord(
        status="succeeded", spec={"name": spec_id.split("-")[0], "adapter": adapter, **(spec or {})}, spec_id=spec_id,
        adapter=AdapterInfo(name=adapter, framework=adapter, version=version, mode=mode),
        benchbed=BenchbedInfo(version="0.1.0"), machine=MACHINE,
        metrics={k: MetricValue(value=v, unit=units.get(k, "ratio")) for k, v in metrics.items()},
    )  # fmt: skip


def test_the_tie_case_of_issue_26_is_unchanged_at_p_0_0606_in_the_report() -> None:
    from benchbed.report.comparison import verdict_table

    base = [record("a-1", staleness_max=v) for v in (1, 1, 1, 1, 1, 2, 2)]
    table, _ = verdict_table(group_runs(base + [record("b-2", staleness_max=2) for _ in range(4)]))
    assert dict((row[0], row[1]) for row in table.rows)["staleness_max"] == "unchanged +100.0%, p=0.061"


def test_median_interval_uses_order_statistics_and_states_weak_coverage() -> None:
    assert median_interval([]) is None
    one = median_interval([3.0])
    assert (one.median, one.low, one.high, one.n) == (3.0, 3.0, 3.0, 1)
    five = median_interval([5.0, 1.0, 4.0, 2.0, 3.0])
    # below six values the interval is the range, with coverage 1 − 2·(1/2)^5
    assert (five.median, five.low, five.high) == (3.0, 1.0, 5.0)
    assert five.coverage == pytest.approx(1 - 2 / 32)
    ten = median_interval([float(i) for i in range(1, 11)])
    # n = 10: [x(2), x(9)] covers 1 − 2·P(Bin(10, ½) ≤ 1) = 1 − 22/1024 ≥ 95%; [x(3), x(8)] would cover only 89%
    assert (ten.median, ten.low, ten.high) == (5.5, 2.0, 9.0)
    assert ten.coverage == pytest.approx(1 - 22 / 1024)
    assert median_interval([1.0, float("nan"), 3.0]).n == 2
    assert ten.text() == "5.5 [2, 9] (interval, 97.9%) n=10" and one.text() == "3 (single run) n=1"


def test_runs_group_by_adapter_and_spec_and_aggregate_repeats() -> None:
    runs = [record("a-1", trainer_idle_ratio=v) for v in (0.1, 0.3, 0.2)]
    runs += [record("b-2", adapter="verl", mode="sync", trainer_idle_ratio=0.5)]
    groups = group_runs(runs)
    assert [(g.adapter, g.spec_id, g.n) for g in groups] == [("sim", "a-1", 3), ("verl", "b-2", 1)]
    assert [g.label for g in groups] == ["a (sim async)", "b (verl sync)"]
    idle = aggregate(groups, ["trainer_idle_ratio", "staleness_mean"])
    assert idle["trainer_idle_ratio"][0].median == pytest.approx(0.2)
    assert (idle["trainer_idle_ratio"][0].low, idle["trainer_idle_ratio"][0].high) == (0.1, 0.3)
    assert idle["staleness_mean"] == [None, None]


def test_duplicate_labels_get_the_fields_that_differ_not_a_hash() -> None:
    steps = [record(f"a-{n}", spec={"workload": {"steps": n}}) for n in (10, 20)]
    labels = ["a (sim async) workload.steps=10", "a (sim async) workload.steps=20"]
    assert [g.label for g in group_runs(steps)] == labels
    same_spec = group_runs([record("a-11111111"), record("a-22222222")])  # one configuration: one group
    assert [(g.label, g.n) for g in same_spec] == [("a (sim async)", 2)]


def test_per_gpu_figures_divide_by_every_gpu_of_the_run() -> None:
    separate = {"resources": {"trainer_gpus": 8, "generator_gpus": 24, "colocated": False}}
    colocated = {"resources": {"trainer_gpus": 8, "generator_gpus": 8, "colocated": True}}
    assert gpu_count(record(spec=separate)) == 32
    assert gpu_count(record(spec=colocated)) == 8
    assert gpu_count(record()) is None  # ingested runs state no resources: no per-GPU figure
    values = metric_values(record(spec=separate, trainer_throughput_sps=64.0, output_tokens_per_s=3200.0))
    assert values["trainer_throughput_per_gpu"] == pytest.approx(2.0)
    assert values["output_tokens_per_s_per_gpu"] == pytest.approx(100.0)
    assert "trainer_throughput_per_gpu" not in metric_values(record(trainer_throughput_sps=64.0))


def test_what_differs_lists_only_fields_that_differ() -> None:
    a = record("q-1", spec={"workload": {"group_size": 16, "steps": 10}, "sim": {"concurrency": 64}}, version="1")
    b = record("q-2", spec={"workload": {"group_size": 16, "steps": 10}, "sim": {"concurrency": 128}}, version="1")
    c = record("q-2", spec={"workload": {"group_size": 16, "steps": 10}, "sim": {"concurrency": 128}}, version="2")
    rows = dict(what_differs(group_runs([a, b, c])))
    assert rows == {"spec.sim.concurrency": ["64", "128"], "framework version": ["1", "1 / 2"]}


def make_matrix(concurrency: list[int], policy: list[str], repeats: int,
                idle: Callable[[int, str, int], float]) -> list[RunRecord]:  # fmt: skip
    runs = []
    for c in concurrency:
        for p in policy:
            variant = {"sim.concurrency": c, "sim.staleness_policy": p}
            for r in range(repeats):
                runs.append(record(f"m-{c}{p}", spec={"variant": variant}, trainer_idle_ratio=idle(c, p, r)))
    return runs


def test_matrix_curves_one_line_per_value_of_the_other_axes() -> None:
    runs = make_matrix([64, 128, 256], ["count", "drop"], 3, lambda c, p, r: 64 / c + (p == "drop") / 10 + r / 100)
    groups = group_runs(runs)
    assert matrix_axes(groups) == ["sim.concurrency"]  # the policy axis is not numeric: it names the lines
    curves = matrix_curves(groups, "sim.concurrency", "trainer_idle_ratio")
    assert [c.fixed for c in curves] == [{"sim.staleness_policy": "count"}, {"sim.staleness_policy": "drop"}]
    assert curves[0].x == (64.0, 128.0, 256.0)
    assert [iv.median for iv in curves[0].y] == pytest.approx([1.01, 0.51, 0.26])
    assert [iv.median for iv in curves[1].y] == pytest.approx([1.11, 0.61, 0.36])
    assert all(iv.n == 3 and iv.low == pytest.approx(iv.median - 0.01) for iv in curves[0].y)


def test_verdicts_compare_each_group_with_the_first_by_the_regression_gate() -> None:
    from benchbed.report.comparison import verdict_table

    base = [record("a-1", trainer_idle_ratio=v, staleness_mean=1.0) for v in (0.20, 0.21, 0.22, 0.23)]
    worse = [record("b-2", trainer_idle_ratio=v, staleness_mean=1.0) for v in (0.40, 0.41, 0.42, 0.43)]
    few = [record("c-3", trainer_idle_ratio=0.1)]
    table, note = verdict_table(group_runs(base + worse + few))
    assert table.header == ("metric", "b (sim async) vs a (sim async)", "c (sim async) vs a (sim async)")
    rows = {row[0]: row[1:] for row in table.rows}
    # 4 vs 4 runs: exact Mann-Whitney p = 2/70; medians 0.215 → 0.415 of a lower-is-better metric: a regression
    assert rows["trainer_idle_ratio"] == ("regression +93.0%, p=0.029", "too few runs (n=4 vs 1)")
    assert rows["staleness_mean"] == ("unchanged +0.0%, p=1", "—")
    assert "exact permutation p-value with average ranks" in note


def test_groups_are_configurations_named_by_what_differs_with_that_field_first() -> None:
    """Issue 26: the same configuration run once and run seven times is one group (`repeats` is not part of the
    configuration); groups with one spec name are labelled by the field that separates them, which leads the
    what-differs table ahead of fields only one adapter has."""

    def run(concurrency: int, repeats: int, extra: dict[str, Any] | None = None) -> RunRecord:
        spec = {"repeats": repeats, "sim": {"concurrency": concurrency, "mode": "async"}, **(extra or {})}
        return record(f"q-{concurrency}{repeats}", spec=spec, trainer_idle_ratio=0.1)

    groups = group_runs([run(8, 1), *[run(8, 7)] * 7, run(12, 1), run(16, 1)])
    assert [(g.label, g.n) for g in groups] == [("q (sim async) sim.concurrency=8", 8),
                                                ("q (sim async) sim.concurrency=12", 1),
                                                ("q (sim async) sim.concurrency=16", 1)]  # fmt: skip
    mixed = group_runs([run(8, 1), run(12, 1, {"verl": {"rollout": "vllm"}}), run(16, 1)])
    assert [field for field, _ in what_differs(mixed)] == ["spec.sim.concurrency", "spec.verl.rollout"]


def test_interval_text_states_its_coverage_and_n_everywhere() -> None:
    assert median_interval([1.0, 2.0, 3.0, 4.0]).text() == "2.5 [1, 4] (range, 87.5%) n=4"
    assert median_interval([1.0, 2.0]).text() == "1.5 [1, 2] (range, 50%) n=2"
    assert median_interval([3.0]).text() == "3 (single run) n=1"
    assert median_interval([float(i) for i in range(1, 11)]).text() == "5.5 [2, 9] (interval, 97.9%) n=10"


def test_charts_carry_n_and_mark_single_runs() -> None:
    """Issue 26: every chart of group values says n; a single run's bar is hatched and said to be one run."""
    import numpy as np

    from benchbed.report import compare_plots

    four, one = median_interval([1.0, 2.0, 3.0, 4.0]), median_interval([5.0])
    bars = compare_plots.interval_bars("t", ["a", "b"], {"throughput": [four, one]}, "samples/s")
    assert "n=4, range, 87.5%" in bars and "n=1, single run" in bars and "single run (no interval)" in bars
    cdfs = compare_plots.overlaid_cdfs("t", {"a": np.arange(5.0), "b": np.arange(3.0)}, {"a": "#000", "b": "#111"},
                                       "x", runs={"a": 4, "b": 1})  # fmt: skip
    assert "a (n=4, 5 values)" in cdfs and "b (n=1 (single run), 3 values)" in cdfs
