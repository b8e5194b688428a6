"""The metrics of docs/reference/metrics.md on small traces whose answers are worked out by hand in the comments."""

from __future__ import annotations

import pandas as pd
import pytest

from benchbed.metrics import METRICS, compute_metrics
from benchbed.trace import Trace, TraceBuilder, TraceMeta


def add_step(b: TraceBuilder, step: int, start: float, **phases: float) -> float:
    """Append consecutive component spans (in the given order) and the enclosing step span."""
    t = start
    for name, seconds in phases.items():
        b.span(f"trainer.{name}", t, t + seconds, step=step, actor="trainer")
        t += seconds
    b.span("trainer.step", start, t, step=step, actor="trainer")
    return t


def rollout(b: TraceBuilder, sample: str, group: str, t0: float, t1: float, vs: int, ve: int, vt: int,
            reward: float, status: str = "ok") -> None:  # fmt: skip
    step = vt + 1 if vt >= 0 else -1
    b.span("rollout", t0, t1, step=step, sample=sample, group=group, v_start=vs, v_end=ve, v_train=vt,
           status=status, value=reward)  # fmt: skip


@pytest.fixture
def span_trace():
    b = TraceBuilder()
    t = add_step(b, 1, 0.0, wait=6, compute=4)  # warm-up step, outside the window
    t = add_step(b, 2, t, wait=3, compute=5, weight_sync=2)
    t = add_step(b, 3, t, wait=1, compute=5, weight_sync=2, checkpoint=2)
    add_step(b, 4, t, wait=2, compute=6, weight_sync=2)
    # window = steps 2..4 = [10, 40], 30 s: wait 6, compute 16, sync 6, checkpoint 2, other 0
    rollout(b, "s1", "a", 2, 9, 0, 0, 1, 1.0)
    rollout(b, "s2", "a", 3, 12, 0, 1, 1, 0.0)
    rollout(b, "s3", "b", 12, 19, 1, 1, 2, 1.0)
    rollout(b, "s4", "b", 12, 21, 1, 2, 2, 1.0)
    rollout(b, "s5", "c", 17, 29, 1, 2, 3, 0.0)
    rollout(b, "s6", "c", 22, 31, 2, 3, 3, 0.0)
    rollout(b, "s7", "d", 31, 38, 3, 3, -1, 1.0, "dropped_stale")
    rollout(b, "s8", "d", 31, 39, 3, 3, -1, 0.0, "dropped_stale")
    for group, t0, std, status in (("a", 12, 0.5, "ok"), ("b", 21, 0.0, "ok"), ("c", 31, 0.0, "ok"),
                                   ("d", 39, 0.5, "dropped_stale")):  # fmt: skip
        b.point("rollout.group", t0, group=group, value=std, status=status)
    for t0, t1 in ((12, 15), (14, 18), (35, 45)):
        b.span("generator.paused", t0, t1, actor="generator")
    for seconds, status in ((1.0, "ok"), (3.0, "ok"), (10.0, "start_timeout"), (2.0, "ok")):
        b.span("sandbox.start", 0.0, seconds, status=status, actor="sandbox")
    b.span("sandbox.queue", 0.0, 0.5)
    b.span("sandbox.queue", 0.0, 1.5)
    for step, ratio in ((1, 0.9), (2, 0.1), (3, 0.2), (4, 0.3)):
        b.agg("framework.trainer_idle_ratio", step, ratio)
    return b.build(TraceMeta(adapter="test", concurrency=3, samples_per_step=2))


def values(trace, **kw):
    return {name: m.value for name, m in compute_metrics(trace, **kw).items()}


def test_trainer_breakdown_from_spans(span_trace):
    m = values(span_trace)
    assert m["trainer_idle_ratio"] == pytest.approx(6 / 30)
    assert m["trainer_compute_ratio"] == pytest.approx(16 / 30)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(6 / 30)
    assert m["trainer_checkpoint_ratio"] == pytest.approx(2 / 30)
    assert m["trainer_other_ratio"] == pytest.approx(0.0, abs=1e-12)
    assert m["step_time_mean_s"] == pytest.approx(10.0)
    assert m["startup_s"] == 0.0


def test_warmup_steps_moves_the_window(span_trace):
    m = values(span_trace, warmup_steps=0)  # all four steps: 40 s, wait 12
    assert m["trainer_idle_ratio"] == pytest.approx(12 / 40)
    m = values(span_trace, warmup_steps=3)  # step 4 only
    assert m["trainer_idle_ratio"] == pytest.approx(2 / 10)


def test_throughputs_and_rate_gap(span_trace):
    m = values(span_trace)
    # trained in steps 2..4: s1..s6; finished inside (10, 40]: s2..s8 (s1 finished at 9), of which 5 ok
    assert m["trainer_throughput_sps"] == pytest.approx(6 / 30)
    assert m["generator_throughput_sps"] == pytest.approx(7 / 30)
    assert m["effective_generator_throughput_sps"] == pytest.approx(5 / 30)
    # 2 samples per step / (16 / 3 s of compute per step)
    assert m["trainer_capacity_sps"] == pytest.approx(2 / (16 / 3))
    assert m["rate_gap"] == pytest.approx((5 / 30) / (2 / (16 / 3)))


def test_generator_utilization_and_pauses(span_trace):
    m = values(span_trace)
    # overlap with [10, 40]: s2 2, s3 7, s4 9, s5 12, s6 9, s7 7, s8 8 = 54 slot-seconds of 3 × 30
    assert m["generator_utilization"] == pytest.approx(54 / 90)
    # pauses clipped to the window: [12, 18] (two overlapping spans) and [35, 40] = 11 s
    assert m["generator_paused_ratio"] == pytest.approx(11 / 30)
    # slot-time held back: 3 slots × 11 s of pauses = 33, minus rollouts running inside them
    # ([12, 18]: s3 6, s4 6, s5 1; [35, 40]: s7 3, s8 4 = 20) = 13 slot-seconds of 3 × 30
    assert m["generator_admission_idle_ratio"] == pytest.approx(13 / 90)


def test_staleness_family(span_trace):
    m = values(span_trace)
    # v_train − v_start: s1 1, s2 1, s3 1, s4 1, s5 2, s6 1
    assert m["staleness_mean"] == pytest.approx(7 / 6)
    assert m["staleness_p50"] == 1.0 and m["staleness_max"] == 2.0
    assert m["staleness_p99"] == pytest.approx(1.95)
    # v_end − v_start: 0 1 0 1 1 1; v_train − v_end: 1 0 1 0 1 0
    assert m["staleness_in_flight_mean"] == pytest.approx(4 / 6)
    assert m["staleness_in_queue_mean"] == pytest.approx(3 / 6)
    assert m["mixed_policy_fraction"] == pytest.approx(4 / 6)


def test_waste_groups_and_stragglers(span_trace):
    m = values(span_trace)
    assert m["dropped_stale_fraction"] == pytest.approx(2 / 7)
    assert m["wasted_generation_fraction"] == pytest.approx(2 / 7)
    # group rows in the window: a (std 0.5), b (0), c (0), d (0.5)
    assert m["zero_adv_group_fraction"] == pytest.approx(0.5)
    # groups with ≥ 2 finished samples in the window: b 9/8, c 12/10.5, d 8/7.5
    assert m["group_straggler_ratio"] == pytest.approx((9 / 8 + 12 / 10.5 + 8 / 7.5) / 3)


def test_sandbox_metrics(span_trace):
    m = values(span_trace)
    assert m["sandbox_init_failure_rate"] == pytest.approx(0.25)
    assert m["sandbox_start_p50_s"] == 2.0 and m["sandbox_start_max_s"] == 3.0
    assert m["sandbox_start_p99_s"] == pytest.approx(2.98)
    assert m["sandbox_queue_p50_s"] == pytest.approx(1.0)
    # queue 0.5 + 1.5 and starts 1 + 3 + 10 + 2 = 18 s beside 7+9+7+9+12+9+7+8 = 68 s of rollouts
    assert m["sandbox_start_share"] == pytest.approx(18 / 68)
    assert "rollout_tail_share" not in m  # no step trains the 10 rollouts a last tenth needs


def test_rollout_tail_share_is_the_last_tenths_share_of_the_batch():
    b = TraceBuilder()
    t = add_step(b, 1, 0.0, compute=1)
    add_step(b, 2, t, wait=99, compute=1)
    add_step(b, 3, 101.0, wait=199, compute=1)
    # step 2: ten rollouts from 1 s ending at 10, 11, ..., 18 and 100: the 90th percentile of t1 is 26.2
    # (18 + 0.1 × 82), so the tail is (100 − 26.2) / (100 − 1)
    for i, end in enumerate([*range(10, 19), 100]):
        rollout(b, f"a{i}", f"a{i}", 1.0, float(end), 0, 0, 1, 1.0)
    # step 3: ten rollouts from 101 s ending evenly at 110, 120, ..., 200: t1's 90th percentile is 191
    for i in range(10):
        rollout(b, f"b{i}", f"b{i}", 101.0, 110.0 + 10 * i, 1, 1, 2, 1.0)
    m = values(b.build(TraceMeta(adapter="test")))
    expected = ((100 - 26.2) / 99 + (200 - 191) / 99) / 2
    assert m["rollout_tail_share"] == pytest.approx(expected)


def test_framework_figure_is_kept_beside_ours(span_trace):
    metrics = compute_metrics(span_trace)
    assert metrics["framework_trainer_idle_ratio"].value == pytest.approx(0.2)  # mean of steps 2..4
    assert metrics["framework_trainer_idle_ratio"].source == "framework"
    assert metrics["framework_trainer_idle_ratio"].unit == "ratio"
    assert metrics["trainer_idle_ratio"].source == "span"


def test_zero_advantage_from_rewards_when_no_group_rows():
    b = TraceBuilder()
    add_step(b, 1, 0.0, wait=1, compute=1)
    add_step(b, 2, 2.0, wait=1, compute=1)
    for sample, group, reward in (("1", "a", 1), ("2", "a", 1), ("3", "b", 0), ("4", "b", 1), ("5", "c", 0),
                                  ("6", "c", 0)):  # fmt: skip
        rollout(b, sample, group, 2.0, 3.0, 0, 0, 1, float(reward))
    m = values(b.build(TraceMeta(adapter="t")))
    assert m["zero_adv_group_fraction"] == pytest.approx(2 / 3)


def agg_trace():
    b = TraceBuilder()
    rows = {
        1: {"step": 30, "wait": 25, "compute": 5},
        2: {"step": 12, "wait": 4, "compute": 6, "weight_sync": 2},
        3: {"step": 8, "wait": 2, "compute": 5, "checkpoint": 1},
    }
    for step, parts in rows.items():
        for name, seconds in parts.items():
            b.agg(f"trainer.{name}", step, seconds)
        b.agg("samples.trained", step, 16)
        b.agg("samples.finished", step, 20)
        b.agg("samples.accepted", step, 16)
        b.agg("groups.finished", step, 10)
        b.agg("groups.zero_adv", step, 4)
    b.agg("generator.paused", 2, 3)
    b.agg("generator.paused", 3, 1)
    return b.build(TraceMeta(adapter="test"))


def test_metrics_from_agg_rows_only():
    metrics = compute_metrics(agg_trace())
    m = {k: v.value for k, v in metrics.items()}
    # window = steps 2, 3: 20 s; wait 6, compute 11, sync 2, checkpoint 1
    assert m["trainer_idle_ratio"] == pytest.approx(0.3)
    assert m["trainer_compute_ratio"] == pytest.approx(0.55)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(0.1)
    assert m["trainer_checkpoint_ratio"] == pytest.approx(0.05)
    assert m["trainer_other_ratio"] == pytest.approx(0.0, abs=1e-12)
    assert m["step_time_mean_s"] == pytest.approx(10.0)
    assert m["trainer_throughput_sps"] == pytest.approx(32 / 20)
    assert m["trainer_capacity_sps"] == pytest.approx(16 / 5.5)
    assert m["generator_throughput_sps"] == pytest.approx(2.0)
    assert m["effective_generator_throughput_sps"] == pytest.approx(1.6)
    assert m["wasted_generation_fraction"] == pytest.approx(0.2)
    assert m["zero_adv_group_fraction"] == pytest.approx(0.4)
    assert m["generator_paused_ratio"] == pytest.approx(0.2)
    assert m["generator_admission_idle_ratio"] == pytest.approx(0.2)  # per-step pauses stop the whole generator
    assert all(v.source == "agg" for v in metrics.values())
    # no spans, no rollouts, no concurrency: these cannot be computed and are absent, not 0
    for absent in ("generator_utilization", "staleness_mean", "startup_s", "sandbox_init_failure_rate"):
        assert absent not in m


def test_unexplained_step_time_goes_to_other():
    b = TraceBuilder()
    add_step(b, 1, 0, wait=1)
    end = add_step(b, 2, 1, wait=2, compute=3)
    b.span("trainer.step", end, end + 5, step=3)  # a 5 s step with only 1 s of compute logged
    b.span("trainer.compute", end + 4, end + 5, step=3)
    m = values(b.build(TraceMeta(adapter="t")))
    assert m["trainer_idle_ratio"] == pytest.approx(2 / 10)
    assert m["trainer_compute_ratio"] == pytest.approx(4 / 10)
    assert m["trainer_other_ratio"] == pytest.approx(4 / 10)
    # weight sync and checkpoints were never logged: unknown, so absent rather than 0
    assert "trainer_weight_sync_ratio" not in m and "trainer_checkpoint_ratio" not in m


def test_components_never_logged_are_absent_not_zero():
    b = TraceBuilder()
    for step, (wait, total) in enumerate([(5, 10), (3, 12), (6, 8)], start=1):
        b.agg("trainer.step", step, total)
        b.agg("trainer.wait", step, wait)
    m = values(b.build(TraceMeta(adapter="t")))
    assert m["trainer_idle_ratio"] == pytest.approx(9 / 20)
    # without measured compute, the rest of the step cannot be split: no compute, sync, checkpoint or other
    for absent in ("compute", "weight_sync", "checkpoint", "other"):
        assert f"trainer_{absent}_ratio" not in m
    assert "trainer_capacity_sps" not in m


def test_overlapping_components_lose_the_overlap_from_compute_with_a_warning():
    b = TraceBuilder()
    add_step(b, 1, 0, compute=1)
    b.span("trainer.step", 1, 11, step=2)
    b.span("trainer.wait", 1, 9, step=2)
    b.span("trainer.compute", 1, 11, step=2)  # overlaps the wait: 18 s of components in a 10 s step
    warnings: list[str] = []
    metrics = compute_metrics(b.build(TraceMeta(adapter="t")), warnings=warnings)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(8 / 10)  # the wait as measured; compute holds 8 s
    assert metrics["trainer_compute_ratio"].value == pytest.approx(2 / 10)  # 10 s of compute less the 8 s overlap
    assert any("add up to 1.800" in w and "taken out of trainer.compute" in w for w in warnings)


def test_empty_trace_has_no_metrics():
    assert compute_metrics(TraceBuilder().build(TraceMeta(adapter="t"))) == {}


def test_every_design_metric_is_registered():
    design = [
        "trainer_idle_ratio",
        "trainer_compute_ratio",
        "trainer_weight_sync_ratio",
        "trainer_checkpoint_ratio",
        "trainer_other_ratio",
        "generator_utilization",
        "generator_paused_ratio",
        "generator_admission_idle_ratio",
        "trainer_capacity_sps",
        "trainer_throughput_sps",
        "generator_throughput_sps",
        "effective_generator_throughput_sps",
        "rate_gap",
        "staleness_mean",
        "staleness_p50",
        "staleness_p99",
        "staleness_max",
        "staleness_in_flight_mean",
        "staleness_in_queue_mean",
        "mixed_policy_fraction",
        "dropped_stale_fraction",
        "zero_adv_group_fraction",
        "wasted_generation_fraction",
        "group_straggler_ratio",
        "sandbox_init_failure_rate",
        "sandbox_start_p50_s",
        "sandbox_start_p99_s",
        "sandbox_start_max_s",
        "sandbox_queue_p50_s",
        "sandbox_queue_p99_s",
        "step_time_mean_s",
        "startup_s",
        # issue 12: partial rollout, response cap and cost (docs/reference/metrics.md)
        "staleness_env_mean",
        "staleness_env_max",
        "partial_resumed_fraction",
        "partial_buffered_per_step",
        "response_truncated_fraction",
        "gpu_hours_per_step",
        "cost_per_step",
        "cost_per_mtok",
        # issue 27: the diagnosis's oversampling-discard flag (docs/reference/metrics.md)
        "discarded_fraction",
        # issue 34: the diagnosis's sandbox-start-bound and long-tail regimes (docs/reference/metrics.md)
        "sandbox_start_share",
        "rollout_tail_share",
        # issue 40: learning to a quality target (docs/reference/metrics.md)
        "target_reached",
        "steps_to_target",
        "time_to_target_s",
        "gpu_hours_to_target",
        "final_reward_mean",
        "reward_gain",
        "reward_gain_per_gpu_hour",
        # issue 38: GPU utilisation beside the timers (docs/reference/metrics.md)
        "gpu_busy_ratio",
        "trainer_gpu_busy_ratio",
        "generator_gpu_busy_ratio",
        "trainer_gpu_idle_gap",
        "gpu_power_mean_w",
        # issue 34: APRIL's off-policy share of a partial-rollout round's tokens (docs/reference/metrics.md)
        "off_policy_token_share",
    ]
    assert sorted(METRICS) == sorted(design)
    assert all(METRICS[name].unit for name in design)


def test_off_policy_token_share_weighs_the_windows_rounds_by_their_tokens():
    b = TraceBuilder()
    for step, (decoded, off) in enumerate([(100, 900), (300, 100), (500, 100), (0, 0)], start=1):
        add_step(b, step, 10.0 * (step - 1), compute=10)
        b.agg("samples.decoded_tokens", step, decoded, actor="generator")
        b.agg("samples.off_policy_tokens", step, off, actor="generator")
    m = compute_metrics(b.build(TraceMeta(adapter="t")), warmup_steps=1)
    assert m["off_policy_token_share"].value == pytest.approx(200 / 1000)  # steps 2-4; step 1 is the warm-up
    assert "off_policy_token_share" not in compute_metrics(b.build(TraceMeta(adapter="t")), warmup_steps=3)


def test_negative_staleness_is_left_out_with_a_warning_naming_the_rows():
    b = TraceBuilder()
    for step in (1, 2, 3):
        add_step(b, step, 10.0 * (step - 1), compute=10)
    rollout(b, "s1", "a", 11, 12, 1, 1, 2, 1.0)  # row 6: staleness 1
    rollout(b, "s2", "a", 11, 13, 2, 2, 2, 0.0)  # row 7: staleness 0
    rollout(b, "s3", "b", 21, 22, 3, 3, 2, 1.0)  # row 8: started at version 3, trained at 2: an adapter bug
    warnings: list[str] = []
    m = {k: v.value for k, v in compute_metrics(b.build(TraceMeta(adapter="t")), warnings=warnings).items()}
    assert m["staleness_mean"] == pytest.approx(0.5) and m["staleness_max"] == 1
    (warning,) = [w for w in warnings if "negative staleness" in w]
    assert "1 trained sample(s)" in warning and "trace rows 8 (step 3)" in warning


def test_a_plot_and_its_ratio_agree_when_components_overlap():
    from benchbed.metrics import series

    b = TraceBuilder()
    add_step(b, 1, 0, wait=2, compute=8)
    b.span("trainer.step", 10, 20, step=2)
    b.span("trainer.wait", 10, 16, step=2)
    b.span("trainer.compute", 12, 20, step=2)  # 14 s of components in a 10 s step
    trace = b.build(TraceMeta(adapter="t"))
    warnings: list[str] = []
    ratio = compute_metrics(trace, warmup_steps=0, warnings=warnings)["trainer_idle_ratio"].value
    frame = series.step_breakdown(trace).frame
    assert frame["wait"].sum() / frame["step_s"].sum() == pytest.approx(ratio) == pytest.approx((2 + 6) / 20)
    assert frame["other"].tolist() == [0.0, 0.0]
    assert any("1.400 of step time in 1 step(s)" in w and "steps 2 (1.400×)" in w for w in warnings)


def test_buffered_partial_rollout_time_holds_no_slot(span_trace):
    """s4 (12-21) waited in the partial-rollout buffer during [14, 17]: those 3 s are not slot time, inside the
    window or inside the pause [12, 18]."""
    b = TraceBuilder()
    b.span("rollout.buffered", 14.0, 17.0, sample="s4", group="b", actor="generator")
    trace = Trace(pd.concat([span_trace.events, b.build(span_trace.meta).events], ignore_index=True), span_trace.meta)
    m = values(trace)
    assert m["generator_utilization"] == pytest.approx((54 - 3) / 90)
    assert m["generator_admission_idle_ratio"] == pytest.approx((33 - (20 - 3)) / 90)


def test_a_modelled_mechanism_that_never_acted_is_0_and_an_unmodelled_one_is_absent():
    """Issue 26: a simulated run whose admission never held a slot back has no generator.paused span; the trace
    says the simulator models pauses, so both pause metrics are 0. The same events from a producer that does not
    say so leave them absent (not measured)."""
    from benchbed.sim import simulate_spec
    from benchbed.spec import build_spec

    workload = {"prompts_per_step": 2, "group_size": 4, "steps": 10, "max_staleness": 8}
    sim = {"mode": "async", "concurrency": 8}
    spec = build_spec({"name": "free", "adapter": "sim", "sim": sim, "workload": workload})
    trace = simulate_spec(spec)
    assert trace.meta.modelled == ["generator.paused"] and not (trace.events["key"] == "generator.paused").any()
    metrics = compute_metrics(trace)
    assert (metrics["generator_paused_ratio"].value, metrics["generator_admission_idle_ratio"].value) == (0.0, 0.0)
    unmodelled = compute_metrics(Trace(trace.events, trace.meta.model_copy(update={"modelled": []})))
    assert "generator_paused_ratio" not in unmodelled and "generator_admission_idle_ratio" not in unmodelled
