"""series.py on hand-built traces whose answers are worked out by hand, and cross-checks against metrics."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from benchbed.metrics import compute_metrics, series
from benchbed.trace import Trace, attrs_json


def span(key: str, t0: float, t1: float, **fields: object) -> tuple[str, str, dict[str, object]]:
    return key, "span", {"t0": t0, "t1": t1, **fields}


def agg(key: str, step: int, value: float) -> tuple[str, str, dict[str, object]]:
    return key, "agg", {"step": step, "value": value}


def test_step_breakdown_from_spans_other_is_unexplained_rest(build: Callable[..., Trace]) -> None:
    trace = build([
        span("trainer.step", 0, 10, step=1), span("trainer.wait", 0, 4, step=1),
        span("trainer.compute", 4, 9, step=1), span("trainer.weight_sync", 9, 9.5, step=1),
        span("trainer.step", 10, 16, step=2), span("trainer.compute", 10, 15, step=2),
        span("trainer.checkpoint", 15, 15.5, step=2),
        agg("trainer.step", 1, 99.0), agg("trainer.compute", 1, 99.0),  # spans win over agg rows
    ])  # fmt: skip
    result = series.step_breakdown(trace)
    assert result.source == "trainer spans"
    expected = pd.DataFrame({
        "step": [1, 2], "wait": [4.0, 0.0], "compute": [5.0, 5.0], "weight_sync": [0.5, 0.0],
        "checkpoint": [0.0, 0.5], "other": [0.5, 0.5], "step_s": [10.0, 6.0],
    })  # fmt: skip
    pd.testing.assert_frame_equal(result.frame, expected)


def test_step_breakdown_from_agg_uses_logged_other_without_step_total(build: Callable[..., Trace]) -> None:
    trace = build([
        agg("trainer.step", 1, 10.0), agg("trainer.wait", 1, 3.0), agg("trainer.compute", 1, 6.0),
        agg("trainer.other", 1, 5.0),  # inconsistent with the step total: the rest of the step (1 s) wins
        agg("trainer.compute", 2, 5.0), agg("trainer.other", 2, 2.0),
        agg("trainer.step", 3, 4.0), agg("trainer.wait", 3, 3.0), agg("trainer.compute", 3, 3.0),
    ])  # fmt: skip
    frame = series.step_breakdown(trace).frame
    source = series.step_breakdown(trace).source
    assert source == "per-step agg rows (overlap taken out of compute in 1 step(s) where components overlap)"
    assert frame["step"].tolist() == [1, 2, 3]
    assert frame["other"].tolist() == [1.0, 2.0, 0.0]
    assert frame["step_s"].tolist() == [10.0, 7.0, 4.0]
    assert frame["wait"].tolist() == [3.0, 0.0, 3.0]  # step 3: 6 s of components in 4 s: compute holds the 2 s
    assert frame["compute"].tolist() == [6.0, 5.0, 1.0]


def test_step_breakdown_empty_without_components(build: Callable[..., Trace]) -> None:
    result = series.step_breakdown(build([span("rollout", 0, 1, status="ok")]))
    assert result.source == "" and len(result.frame) == 0
    assert list(result.frame.columns) == ["step", *series.COMPONENTS, "step_s"]


def test_staleness_values_trained_samples_with_known_versions_after_warmup(build: Callable[..., Trace]) -> None:
    trace = build([
        span("rollout", 0, 1, status="ok", v_start=0, v_train=2, step=3),
        span("rollout", 0, 1, status="ok", v_start=1, v_train=2, step=3),
        span("rollout", 0, 1, status="dropped_stale", v_start=0, v_train=3, step=4),
        span("rollout", 0, 1, status="ok", v_start=-1, v_train=2, step=3),
        span("rollout", 0, 1, status="ok", v_start=0, v_train=0, step=1),
        *(agg("trainer.step", step, 1.0) for step in (1, 3, 4)),  # the metric window's steps
    ])  # fmt: skip
    assert sorted(series.staleness_values(trace).tolist()) == [0, 1, 2]
    assert sorted(series.staleness_values(trace, warmup_steps=1).tolist()) == [1, 2]


def test_running_rollouts_time_average_per_bin(build: Callable[..., Trace]) -> None:
    rows = [span("rollout", 0, 4, status="ok"), span("rollout", 2, 6, status="ok"), span("rollout", 2, 3, status="ok")]
    frame = series.running_rollouts(build(rows, concurrency=4), bins=3)
    # bins [0,2] [2,4] [4,6]: 2 s of one rollout; 2 + 2 + 1 rollout-seconds over 2 s; 2 s of one rollout.
    np.testing.assert_allclose(frame["t0"], [0, 2, 4])
    np.testing.assert_allclose(frame["t1"], [2, 4, 6])
    np.testing.assert_allclose(frame["running"], [1.0, 2.5, 1.0])
    np.testing.assert_allclose(frame["utilisation"], [0.25, 0.625, 0.25])
    unknown = series.running_rollouts(build(rows), bins=3)
    assert unknown["utilisation"].isna().all()
    assert len(series.running_rollouts(build([agg("trainer.step", 1, 1.0)]))) == 0


def test_zero_adv_per_step_assigns_groups_by_finish_time(build: Callable[..., Trace]) -> None:
    trace = build([
        span("trainer.step", 0, 10, step=1), span("trainer.step", 10, 20, step=2),
        ("rollout.group", "point", {"t0": 5.0, "value": 0.0, "step": 7, "status": "ok"}),
        ("rollout.group", "point", {"t0": 10.0, "value": 0.5, "status": "ok"}),  # a step's end belongs to it
        ("rollout.group", "point", {"t0": 12.0, "value": 0.0, "status": "ok"}),
        ("rollout.group", "point", {"t0": 25.0, "value": 0.0, "status": "ok"}),  # after the last step: not counted
    ])  # fmt: skip
    result = series.zero_adv_per_step(trace)
    assert result.source == "rollout.group rows by finish time"
    assert result.frame.to_dict("list") == {"step": [1, 2], "groups": [2, 1], "zero_adv": [1, 1]}


def test_zero_adv_per_step_by_step_column_without_times(build: Callable[..., Trace]) -> None:
    trace = build([
        ("rollout.group", "point", {"step": 3, "value": 0.0, "status": "ok"}),
        ("rollout.group", "point", {"step": 3, "value": 0.4, "status": "ok"}),
        ("rollout.group", "point", {"step": -1, "value": 0.0, "status": "ok"}),
    ])  # fmt: skip
    result = series.zero_adv_per_step(trace)
    assert result.source == "rollout.group rows by their step"
    assert result.frame.to_dict("list") == {"step": [3], "groups": [2], "zero_adv": [1]}


def test_zero_adv_per_step_from_agg_counters(build: Callable[..., Trace]) -> None:
    trace = build([
        agg("groups.finished", 1, 8), agg("groups.finished", 2, 4), agg("groups.zero_adv", 1, 2),
        agg("groups.zero_adv", 2, 0),
    ])  # fmt: skip
    result = series.zero_adv_per_step(trace)
    assert result.source == "groups.finished / groups.zero_adv agg rows"
    assert result.frame.to_dict("list") == {"step": [1, 2], "groups": [8, 4], "zero_adv": [2, 0]}
    assert len(series.zero_adv_per_step(build([agg("trainer.step", 1, 1.0)])).frame) == 0


def test_timeline_rows_first_steps_slots_in_natural_order_clipped(build: Callable[..., Trace]) -> None:
    trace = build([
        *(span("trainer.step", 10 * k, 10 * (k + 1), step=k + 1) for k in range(4)),
        span("trainer.compute", 5, 10, step=1), span("trainer.compute", 15, 20, step=2),
        span("trainer.compute", 25, 30, step=3),
        span("generator.paused", 18, 22),
        span("rollout", 0, 5, actor="slot/0", status="ok"),
        span("rollout", 5, 25, actor="slot/0", status="aborted"),
        span("rollout", 1, 3, actor="slot/10", status="ok"),
        span("rollout", 15, 18, actor="slot/2", status="ok"),
        span("rollout", 30, 35, actor="slot/1", status="ok"),
    ])  # fmt: skip
    rows = series.timeline_rows(trace, steps=2, max_lanes=2)
    rollouts = rows[rows["key"] == "rollout"]
    assert rollouts[["lane", "t0", "t1", "status"]].values.tolist() == [
        ["slot/0", 0.0, 5.0, "ok"], ["slot/0", 5.0, 20.0, "aborted"], ["slot/2", 15.0, 18.0, "ok"],
    ]  # fmt: skip
    trainer = rows[rows["lane"] == "trainer"]
    assert trainer[["t0", "t1"]].values.tolist() == [[5.0, 10.0], [15.0, 20.0]]
    assert rows.loc[rows["lane"] == "generator.paused", ["t0", "t1"]].values.tolist() == [[18.0, 20.0]]


@pytest.mark.parametrize("actor", ["", "generator"])  # unknown, or one actor whose rollouts overlap
def test_timeline_rows_packs_lanes_when_actors_are_not_slots(build: Callable[..., Trace], actor: str) -> None:
    intervals = [(0, 5), (1, 3), (3, 6), (5, 8)]
    trace = build([span("rollout", t0, t1, status="ok", actor=actor) for t0, t1 in intervals])
    rows = series.timeline_rows(trace)
    assert rows["lane"].tolist() == ["lane/0", "lane/1", "lane/1", "lane/0"]
    assert len(series.timeline_rows(build([agg("trainer.step", 1, 1.0)]))) == 0


def test_series_agree_with_metrics_on_a_simulated_run(sim_pair: tuple[object, Trace]) -> None:
    record, trace = sim_pair
    metrics = record.metrics
    values = series.staleness_values(trace, warmup_steps=1)
    assert values.mean() == pytest.approx(metrics["staleness_mean"].value)
    assert values.max() == metrics["staleness_max"].value
    frame = series.step_breakdown(trace).frame
    window = frame[frame["step"] > 1]
    assert window["wait"].sum() / window["step_s"].sum() == pytest.approx(metrics["trainer_idle_ratio"].value)
    running = series.running_rollouts(trace, bins=50)
    spans = trace.of("rollout")
    area = (running["running"] * (running["t1"] - running["t0"])).sum()
    assert area == pytest.approx((spans["t1"] - spans["t0"]).sum())
    groups = series.zero_adv_per_step(trace).frame
    in_window = groups[groups["step"] > 1]
    fraction = in_window["zero_adv"].sum() / in_window["groups"].sum()
    assert fraction == pytest.approx(metrics["zero_adv_group_fraction"].value)


def sandbox(key: str, t0: float, t1: float, status: str = "ok", level: int | None = None) -> tuple[str, str, dict]:
    attrs = attrs_json({"level": level, "backend": "local"}) if level is not None else ""
    return span(key, t0, t1, status=status, actor="sandbox", attrs=attrs)


@pytest.fixture
def sweep(build: Callable[..., Trace]) -> Trace:
    """Two levels of a sandbox-bench-like sweep (queue then start per sandbox, exec rows that do not count)."""
    rows = [
        # level 1: waits 0.5 and 0; starts 1.0 and 2.0; first request at 0, last ready at 3.5
        sandbox("sandbox.queue", 0.0, 0.5, level=1), sandbox("sandbox.start", 0.5, 1.5, level=1),
        sandbox("sandbox.exec", 1.5, 1.6, level=1),
        sandbox("sandbox.queue", 1.5, 1.5, level=1), sandbox("sandbox.start", 1.5, 3.5, level=1),
        # level 4: waits 0, 1, 2, 3, 0.2; starts 0.5, 1.0, 0.4 ok, 5.0 start_timeout, 0 rate_limited
        sandbox("sandbox.queue", 10.0, 10.0, level=4), sandbox("sandbox.start", 10.0, 10.5, level=4),
        sandbox("sandbox.queue", 10.0, 11.0, level=4), sandbox("sandbox.start", 11.0, 12.0, level=4),
        sandbox("sandbox.queue", 10.0, 12.0, level=4), sandbox("sandbox.start", 12.0, 17.0, "start_timeout", 4),
        sandbox("sandbox.queue", 10.0, 13.0, level=4), sandbox("sandbox.start", 13.0, 13.0, "rate_limited", 4),
        sandbox("sandbox.queue", 10.0, 10.2, level=4), sandbox("sandbox.start", 10.2, 10.6, level=4),
    ]  # fmt: skip
    return build(rows, adapter="sandbox")


def test_sandbox_levels_per_level_counts_percentiles_and_throughput(sweep: Trace) -> None:
    frame = series.sandbox_levels(sweep)
    assert frame[["level", "attempts", "failures", "ok_timed", "queued"]].values.tolist() == [
        [1, 2, 0, 2, 2], [4, 5, 2, 3, 5],
    ]  # fmt: skip
    np.testing.assert_allclose(frame["failure_rate"], [0.0, 0.4])
    np.testing.assert_allclose(frame["start_p50_s"], [1.5, 0.5])  # ok starts {1, 2} and {0.4, 0.5, 1.0}
    np.testing.assert_allclose(frame["start_p99_s"], [1.99, 0.99])  # linear interpolation: 1 + .99, .5 + .98 * .5
    np.testing.assert_allclose(frame["queue_p50_s"], [0.25, 1.0])  # waits {0, .5} and {0, .2, 1, 2, 3}
    np.testing.assert_allclose(frame["queue_p99_s"], [0.495, 2.96])
    np.testing.assert_allclose(frame["starts_per_s"], [2 / 3.5, 3 / 2.0])  # ok starts / (last ready - first request)


def test_sandbox_start_cdf_per_level_of_successful_starts(sweep: Trace) -> None:
    frame = series.sandbox_start_cdf(sweep)
    assert frame["level"].tolist() == [1, 1, 4, 4, 4]
    np.testing.assert_allclose(frame["start_s"], [1.0, 2.0, 0.4, 0.5, 1.0])
    np.testing.assert_allclose(frame["fraction"], [0.5, 1.0, 1 / 3, 2 / 3, 1.0])


def test_sandbox_failure_reasons_in_vocabulary_order_with_rate_per_attempt(sweep: Trace) -> None:
    frame = series.sandbox_failure_reasons(sweep)
    assert frame[["level", "reason", "failures"]].values.tolist() == [[4, "rate_limited", 1], [4, "start_timeout", 1]]
    np.testing.assert_allclose(frame["rate"], [0.2, 0.2])


def test_sandbox_start_cdf_thins_long_levels_to_evenly_spaced_ranks(build: Callable[..., Trace]) -> None:
    trace = build([sandbox("sandbox.start", 0.0, i / 1000, level=8) for i in range(1000, 0, -1)])
    frame = series.sandbox_start_cdf(trace, max_points=4)
    np.testing.assert_allclose(frame["start_s"], [0.001, 0.334, 0.667, 1.0])  # ranks 1, 334, 667, 1000 of 1000
    np.testing.assert_allclose(frame["fraction"], [0.001, 0.334, 0.667, 1.0])


def test_sandbox_series_without_levels_form_one_group_and_agree_with_metrics(build: Callable[..., Trace]) -> None:
    trace = build([
        sandbox("sandbox.start", 0.0, 2.0), sandbox("sandbox.start", 1.0, 4.0),
        sandbox("sandbox.start", 2.0, 3.0, "image_error"),
        ("sandbox.start", "point", {"t0": 5.0, "status": "ok"}),  # a start logged without an end: counted, untimed
        ("sandbox.start", "point", {"t0": 6.0, "status": "internal"}),
    ])  # fmt: skip
    frame = series.sandbox_levels(trace)
    assert frame[["level", "attempts", "failures", "ok_timed", "queued"]].values.tolist() == [
        [series.NO_LEVEL, 5, 2, 2, 0]
    ]
    assert frame["queue_p50_s"].isna().all()
    np.testing.assert_allclose(frame["starts_per_s"], [2 / 4.0])
    metrics = compute_metrics(trace, warmup_steps=0)
    assert frame["failure_rate"].iloc[0] == pytest.approx(metrics["sandbox_init_failure_rate"].value)
    assert frame["start_p50_s"].iloc[0] == pytest.approx(metrics["sandbox_start_p50_s"].value)
    assert frame["start_p99_s"].iloc[0] == pytest.approx(metrics["sandbox_start_p99_s"].value)
    assert series.sandbox_start_cdf(trace)[["start_s", "fraction"]].values.tolist() == [[2.0, 0.5], [3.0, 1.0]]
    reasons = series.sandbox_failure_reasons(trace)
    assert reasons[["level", "reason", "failures"]].values.tolist() == [
        [series.NO_LEVEL, "image_error", 1], [series.NO_LEVEL, "internal", 1],
    ]  # fmt: skip


def test_sandbox_series_are_empty_without_sandbox_starts(build: Callable[..., Trace]) -> None:
    trace = build([agg("trainer.step", 1, 1.0)])
    assert len(series.sandbox_levels(trace)) == 0 and "starts_per_s" in series.sandbox_levels(trace)
    assert len(series.sandbox_start_cdf(trace)) == 0 and len(series.sandbox_failure_reasons(trace)) == 0
