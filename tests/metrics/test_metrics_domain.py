"""Figures outside their domain are refused or flagged (zero-length windows, warmup beyond the run,
negative durations), and random traces either validate or are refused with the offending row named."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbed.errors import TraceError
from benchbed.metrics import compute_metrics
from benchbed.trace import TraceBuilder, TraceMeta


def test_zero_length_window_gives_no_division_by_zero_and_a_warning():
    b = TraceBuilder()
    for step in (1, 2, 3):  # second-resolution timestamps: every step starts and ends in the same second
        b.span("trainer.step", 100.0, 100.0, step=step)
        b.span("trainer.wait", 100.0, 100.0, step=step)
    b.span("rollout", 99.0, 100.0, step=2, sample="a", group="g", v_start=0, v_end=0, v_train=1, status="ok")
    b.span("generator.paused", 100.0, 100.0)
    warnings: list[str] = []
    metrics = compute_metrics(b.build(TraceMeta(adapter="t", concurrency=4, samples_per_step=2)), warnings=warnings)
    assert all(math.isfinite(m.value) for m in metrics.values())
    assert "generator_utilization" not in metrics and "trainer_throughput_sps" not in metrics
    assert any("metric window (steps 2-3) has zero length" in w for w in warnings)


def test_warmup_beyond_the_run_is_warned():
    b = TraceBuilder()
    for step in (1, 2, 3):
        b.agg("trainer.step", step, 10.0)
        b.agg("trainer.wait", step, 2.0)
    warnings: list[str] = []
    metrics = compute_metrics(b.build(TraceMeta(adapter="t")), warmup_steps=5, warnings=warnings)
    assert "trainer_idle_ratio" not in metrics
    assert any("warmup_steps=5 leaves out every trainer step of this run (the last is step 3)" in w for w in warnings)


@pytest.mark.parametrize(("key", "value"), [("trainer.wait", -30.0), ("samples.trained", -1.0),
                                            ("trainer.step", math.inf)])  # fmt: skip
def test_impossible_agg_values_are_refused_naming_row_and_step(key, value):
    b = TraceBuilder()
    b.agg("trainer.step", 1, 10.0)
    b.agg(key, 4, value)
    with pytest.raises(TraceError, match=rf"row 1, column 'value': {key} = {value} at step\(s\) 4"):
        b.build(TraceMeta(adapter="t")).validate()


_key = st.sampled_from(["trainer.step", "trainer.wait", "trainer.compute", "rollout", "samples.trained",
                        "native.x", "bogus.key"])  # fmt: skip
_num = st.one_of(st.floats(-10, 1000), st.just(math.nan), st.just(math.inf))
_row = st.tuples(_key, st.sampled_from(["span", "agg", "point", "blob"]), st.integers(-1, 6), _num, _num, _num)


@settings(max_examples=30, deadline=None)
@given(st.lists(_row, max_size=25), st.integers(0, 3))
def test_random_traces_validate_or_are_refused_and_metrics_stay_finite(rows, warmup):
    b = TraceBuilder()
    for key, kind, step, t0, t1, value in rows:
        b.add(key, kind, step=step, t0=t0, t1=t1, value=value, sample=f"s{step}", v_train=step - 1,
              v_start=0, v_end=0, status="ok")  # fmt: skip
    trace = b.build(TraceMeta(adapter="prop", concurrency=2, samples_per_step=4))
    try:
        trace.validate()
    except TraceError as exc:
        assert str(exc).startswith("row ") and "\n" not in str(exc)
        return
    metrics = compute_metrics(trace, warmup_steps=warmup)
    for name, metric in metrics.items():
        assert math.isfinite(metric.value), name
