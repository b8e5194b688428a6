"""The simulator against closed forms and against its own contract (modes, determinism, groups, filtering)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from scipy import integrate, stats

from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.sim import sim_params, simulate_spec
from benchbed.sim.engine import simulate
from benchbed.sim.to_trace import outcome_to_trace, range_ids

from .specs import lognormal, make_spec

make_spec = partial(make_spec, steps=200)  # these closed forms want longer runs than the mechanisms'


def metrics_of(spec) -> dict[str, float]:
    return {k: v.value for k, v in compute_metrics(simulate_spec(spec)).items()}


def expected_max(dist: stats.rv_continuous, n: int) -> float:
    """E[max of n iid draws] = ∫ 1 − F(x)^n dx, by numerical integration."""
    value, _ = integrate.quad(lambda x: 1.0 - dist.cdf(x) ** n, 0, np.inf, limit=200)
    return value


@pytest.mark.parametrize(("batch", "mean", "cv", "train"), [(8, 30.0, 0.5, 20.0), (32, 10.0, 1.0, 40.0)])
def test_sync_idle_matches_expected_max_of_batch(batch, mean, cv, train):
    spec = make_spec(
        {
            "mode": "sync",
            "concurrency": batch,
            "latency": {"mean": mean, "cv": cv},
            "train_step_time": train,
            "seed": 3,
        },  # fmt: skip
        prompts=batch,
        steps=1500,
    )
    e_max = expected_max(lognormal(mean, cv), batch)
    m = metrics_of(spec)
    assert m["trainer_idle_ratio"] == pytest.approx(e_max / (e_max + train), abs=0.02)
    assert m["staleness_max"] == 0.0 and m["mixed_policy_fraction"] == 0.0


@pytest.mark.parametrize(("concurrency", "mean", "batch", "train"), [(64, 60.0, 64, 20.0), (100, 50.0, 80, 10.0)])
def test_generation_bound_async_idle_is_one_minus_rate_ratio(concurrency, mean, batch, train):
    spec = make_spec(
        {
            "mode": "async",
            "concurrency": concurrency,
            "latency": {"mean": mean, "cv": 0.5},
            "train_step_time": train,
            "seed": 1,
        },  # fmt: skip
        prompts=batch,
        staleness=1000,
        steps=400,
    )
    expected = 1 - (concurrency / mean) / (batch / train)
    m = metrics_of(spec)
    assert m["trainer_idle_ratio"] == pytest.approx(expected, abs=0.02)
    assert m["generator_utilization"] == pytest.approx(1.0, abs=0.02)
    assert m["rate_gap"] == pytest.approx(1 - expected, abs=0.03)


@pytest.mark.parametrize("max_staleness", [1, 3, 6])
def test_trainer_bound_count_admission_staleness_approaches_the_bound(max_staleness):
    spec = make_spec(
        {
            "mode": "async",
            "staleness_policy": "count",
            "concurrency": 1024,
            "latency": {"mean": 2.0, "cv": 0.3},
            "train_step_time": 30.0,
            "seed": 2,
        },  # fmt: skip
        prompts=32,
        staleness=max_staleness,
        steps=150,
    )
    m = metrics_of(spec)
    assert m["trainer_idle_ratio"] < 0.01
    assert m["staleness_mean"] == pytest.approx(max_staleness, rel=0.1)
    assert m["staleness_max"] <= max_staleness


def test_one_step_off_staleness_is_at_most_one_and_weights_fixed_per_batch():
    spec = make_spec(
        {"mode": "one_step_off", "concurrency": 64, "latency": {"mean": 10.0, "cv": 0.5}, "train_step_time": 8.0},
        prompts=16,
        group=4,
        steps=100,
    )
    trace = simulate_spec(spec)
    trained = trace.of("rollout").query("v_train >= 0")
    assert ((trained.v_train - trained.v_start) <= 1).all()
    assert (trained.v_end == trained.v_start).all()  # no in-flight weight updates
    assert ((trained.v_train - trained.v_start) == 1).mean() > 0.95


def test_drop_policy_drops_stale_groups_and_bounds_trained_staleness():
    spec = make_spec(
        {
            "mode": "async",
            "staleness_policy": "drop",
            "concurrency": 256,
            "latency": {"mean": 10.0, "cv": 1.5},
            "train_step_time": 5.0,
        },  # fmt: skip
        prompts=8,
        group=4,
        staleness=1,
        steps=100,
    )
    trace = simulate_spec(spec)
    m = {k: v.value for k, v in compute_metrics(trace).items()}
    assert m["staleness_max"] <= 1
    assert m["dropped_stale_fraction"] > 0.05
    dropped = trace.of("rollout").query("status == 'dropped_stale'")
    assert (dropped.groupby("group").size() == 4).all()  # whole groups are dropped


def test_zero_advantage_groups_follow_the_pass_rate_and_can_be_filtered():
    # fixed p = 0.5, G = 4: P(all equal) = 2 × 0.5^4 = 0.125
    base = {"mode": "async", "concurrency": 64, "latency": {"mean": 5.0, "cv": 0.5}, "train_step_time": 1.0,
            "pass_rate": 0.5}  # fmt: skip
    m = metrics_of(make_spec(base, prompts=8, group=4, staleness=4, steps=400))
    assert m["zero_adv_group_fraction"] == pytest.approx(0.125, abs=0.015)
    assert m["wasted_generation_fraction"] == 0.0
    filtered = metrics_of(make_spec({**base, "filter_zero_adv": True}, prompts=8, group=4, staleness=4, steps=400))
    assert filtered["wasted_generation_fraction"] == pytest.approx(0.125, abs=0.015)
    assert filtered["effective_generator_throughput_sps"] < filtered["generator_throughput_sps"]


def test_groups_complete_on_their_last_sample():
    spec = make_spec({"concurrency": 32, "latency": {"mean": 10.0, "cv": 1.0}, "train_step_time": 1.0},
                     prompts=4, group=8, staleness=2, steps=20)  # fmt: skip
    trace = simulate_spec(spec)
    rollouts = trace.of("rollout").query("v_train >= 0")
    last_finish = rollouts.groupby("group")["t1"].max()
    groups = trace.of("rollout.group").set_index("group")["t0"]
    np.testing.assert_allclose(groups.loc[last_finish.index], last_finish)
    assert (rollouts.groupby("group")["t0"].nunique() == 1).all()  # dispatched together


def test_empirical_latencies_are_used_as_given():
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": {"dist": "empirical", "values": [3.0, 7.0]},
                      "train_step_time": 1.0}, prompts=4, steps=30)  # fmt: skip
    finished = simulate_spec(spec).of("rollout").query("status != 'aborted'")
    latency = (finished.t1 - finished.t0).round(9)
    assert set(latency.unique()) <= {3.0, 7.0}
    assert set(latency.unique()) == {3.0, 7.0}


def test_weight_sync_time_is_part_of_each_step():
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": 5.0, "train_step_time": 3.0,
                      "weight_sync_time": 2.0}, prompts=4, steps=10)  # fmt: skip
    m = metrics_of(spec)
    assert m["step_time_mean_s"] == pytest.approx(10.0)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(0.2)
    assert m["trainer_idle_ratio"] == pytest.approx(0.5)


def test_same_seed_same_trace_other_seed_other_trace():
    sim = {"concurrency": 16, "latency": {"mean": 5.0, "cv": 0.8}, "train_step_time": 2.0, "seed": 7}
    a = simulate_spec(make_spec(sim, prompts=4, group=4, staleness=2, steps=30)).events
    b = simulate_spec(make_spec(sim, prompts=4, group=4, staleness=2, steps=30)).events
    c = simulate_spec(make_spec({**sim, "seed": 8}, prompts=4, group=4, staleness=2, steps=30)).events
    assert a.equals(b)
    assert not a.equals(c)


def test_trace_is_valid_and_describes_the_generator():
    spec = make_spec({"concurrency": 16, "latency": 2.0, "train_step_time": 1.0}, prompts=2, group=4, steps=5)
    trace = simulate_spec(spec).validate()
    assert trace.meta.concurrency == 16 and trace.meta.samples_per_step == 8 and trace.meta.mode == "async/count"
    assert set(trace.of("rollout").actor.unique()) <= {f"slot/{i}" for i in range(16)}
    assert len(trace.of("trainer.step")) == 5


SANDBOX = {"start_s": {"mean": 3.0, "cv": 0.5}, "create_rate": 2.0, "max_starting": 8, "start_timeout_s": 20.0,
           "fail_p": 0.1, "max_retries": 1, "backoff_s": 2.0}  # fmt: skip


@pytest.mark.parametrize("cast_ahead", [None, 0, 10, 10_000])
def test_sample_ids_are_the_same_however_many_were_cast_ahead(cast_ahead):
    """simulate_spec casts the strings of the sample ids it expects beside the event loop; none of them, fewer than
    the run started or more, the trace is the same: rollout i has sample id "i", a sandbox row its sample's id, a
    trainer row ""."""
    sim = {"concurrency": 16, "latency": {"mean": 5.0, "cv": 0.8}, "train_step_time": 2.0, "sandbox": SANDBOX}
    spec = make_spec(sim, prompts=4, group=4, staleness=2, steps=30)
    params = sim_params(spec)
    names = None if cast_ahead is None else range_ids(0, cast_ahead)
    trace = outcome_to_trace(simulate(params), params, names)
    assert trace.events.equals(simulate_spec(spec).events)
    rollouts = trace.of("rollout")
    assert len(rollouts) > 10 and rollouts["sample"].tolist() == [str(i) for i in range(len(rollouts))]
    starts = trace.of("sandbox.start")["sample"]
    assert len(starts) and starts.str.fullmatch(r"\d+").all() and set(starts) <= set(rollouts["sample"])
    assert (trace.of("trainer.step")["sample"] == "").all()


def test_invalid_sim_tables_name_the_field():
    with pytest.raises(SpecError, match=r"field 'sim.concurrency': Input should be greater than 0"):
        simulate_spec(make_spec({"concurrency": -4}))
    with pytest.raises(SpecError, match=r"unknown field 'sim.concurency'"):
        simulate_spec(make_spec({"concurency": 4}))
    with pytest.raises(SpecError, match=r"sim.concurrency \(2\) must be at least workload.group_size \(4\)"):
        simulate_spec(make_spec({"concurrency": 2}, group=4))
