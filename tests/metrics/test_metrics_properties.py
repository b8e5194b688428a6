"""Properties that hold for any trace: ratios sum to 1, staleness is never negative, row order is irrelevant."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbed.metrics import compute_metrics
from benchbed.trace import Trace, TraceBuilder, TraceMeta

COMPONENTS = ("wait", "compute", "weight_sync", "checkpoint", "other")
seconds = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
step_parts = st.fixed_dictionaries({c: seconds for c in COMPONENTS}).filter(lambda d: sum(d.values()) > 1e-3)
versions = st.integers(min_value=-1, max_value=20)
rollouts = st.lists(
    st.tuples(versions, versions, versions, st.floats(0, 1), st.sampled_from(["ok", "dropped_stale", "aborted"])),
    max_size=30,
)


def build(steps: list[dict[str, float]], samples: list[tuple], use_spans: bool) -> Trace:
    b = TraceBuilder()
    t = 0.0
    for step, parts in enumerate(steps, start=1):
        start = t
        for name in COMPONENTS:
            if use_spans:
                b.span(f"trainer.{name}", t, t + parts[name], step=step)
            else:
                b.agg(f"trainer.{name}", step, parts[name])
            t += parts[name]
        if use_spans:
            b.span("trainer.step", start, t, step=step)
        else:
            b.agg("trainer.step", step, t - start)
    for i, (vs, ve, vt, reward, status) in enumerate(samples):
        b.span("rollout", i * 0.5, i * 0.5 + 1, step=vt + 1 if vt >= 0 else -1, sample=str(i), group=str(i // 4),
               v_start=vs, v_end=ve, v_train=vt, status=status, value=round(reward))  # fmt: skip
    return b.build(TraceMeta(adapter="prop", concurrency=4))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step_parts, min_size=2, max_size=8), use_spans=st.booleans())
def test_five_trainer_ratios_sum_to_one(steps, use_spans):
    m = compute_metrics(build(steps, [], use_spans))
    ratios = [m[f"trainer_{c}_ratio"].value for c in ("idle", "compute", "weight_sync", "checkpoint", "other")]
    assert sum(ratios) == pytest.approx(1.0)
    assert all(0.0 <= r <= 1.0 + 1e-9 for r in ratios)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step_parts, min_size=2, max_size=5), samples=rollouts)
def test_staleness_is_never_negative(steps, samples):
    m = compute_metrics(build(steps, samples, True))
    for name in ("staleness_mean", "staleness_p50", "staleness_p99", "staleness_max", "staleness_in_flight_mean",
                 "staleness_in_queue_mean"):  # fmt: skip
        if name in m:
            assert m[name].value >= 0


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(step_parts, min_size=2, max_size=5), samples=rollouts, seed=st.integers(0, 2**31))
def test_metrics_do_not_depend_on_row_order(steps, samples, seed):
    trace = build(steps, samples, True)
    shuffled = Trace(trace.events.sample(frac=1.0, random_state=np.random.RandomState(seed % 2**31)), trace.meta)
    a = {k: v.value for k, v in compute_metrics(trace).items()}
    b = {k: v.value for k, v in compute_metrics(shuffled).items()}
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key
