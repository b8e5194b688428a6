"""A weight push that drains the generator (no interruptible generation) and a trainer slowed by concurrent
generation, against cases worked by hand."""

from __future__ import annotations

import pytest

from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.sim import simulate_spec

from .specs import make_spec

# Three slots, B = 1, G = 1, 10 s samples, 4 s steps, count admission with max_staleness 2 (started < 3 + v).
DRAIN_CASE = {"mode": "async", "concurrency": 3, "latency": 10.0, "train_step_time": 4.0}


def starts(trace) -> list[float]:
    return sorted(float(t) for t in trace.of("rollout")["t0"])


def version_at_end(trace, started: float) -> int:
    """The weights version the sample started at `started` ended with."""
    rows = trace.of("rollout")
    return int(rows[rows["t0"] == started]["v_end"].iloc[0])


def test_a_draining_push_waits_for_the_samples_in_flight_by_hand():
    # t=0: 3 start (end 10). t=10: step 1 (10-14). t=14: push v1, nothing in flight: loaded at once, 1 starts
    # (end 24); step 2 (14-18). t=18: push v2 with 1 in flight: drain, nothing starts; step 3 (18-22); t=22: push
    # v3, still draining, the trainer waits. t=24: the sample ends, the drain ends (v3 loaded), 2 start (end 34);
    # step 4 (24-28). t=28: push v4, drain until 34; then 1 starts (started 6 < 3 + 4), step 5 (34-38); t=38:
    # push v5, drain; step 6 (38-42); t=42: push v6; t=44: drain ends, 2 start (started 7 < 3 + 6), step 7
    # (44-48); t=48: push v7, drain; t=54: 1 starts (started 9 < 3 + 7), step 8 (54-58).
    trace = simulate_spec(make_spec({**DRAIN_CASE, "drain_on_weight_push": True}, prompts=1, staleness=2, steps=8))
    assert starts(trace) == [0.0, 0.0, 0.0, 14.0, 24.0, 24.0, 34.0, 44.0, 44.0, 54.0]
    steps = trace.of("trainer.step")
    assert [float(t) for t in steps["t1"]] == [14.0, 18.0, 22.0, 28.0, 38.0, 42.0, 48.0, 58.0]
    # The sample started under v1 at 14 ends at 24 still under v1: pushes 2 and 3 waited for it.
    assert version_at_end(trace, 14.0) == 1
    # Without the drain the pushes land while it runs, and a sample starts at every step end.
    plain = simulate_spec(make_spec(DRAIN_CASE, prompts=1, staleness=2, steps=8))
    assert starts(plain)[:6] == [0.0, 0.0, 0.0, 14.0, 18.0, 22.0]
    assert version_at_end(plain, 14.0) == 3


def test_drain_needs_async_without_abort():
    with pytest.raises(SpecError, match="drain_on_weight_push"):
        make_spec({"mode": "sync", "drain_on_weight_push": True})
    with pytest.raises(SpecError, match="drain_on_weight_push"):
        make_spec({"mode": "async", "drain_on_weight_push": True, "abort_on_weight_push": True})


def step_mean(trace, warmup: int) -> float:
    return {k: v.value for k, v in compute_metrics(trace, warmup_steps=warmup).items()}["step_time_mean_s"]


def test_contention_lengthens_steps_while_generation_runs_beside_them():
    # Synchronous: the generator is idle while the trainer computes, so a step is 10 s of generation + 4 s.
    sync = make_spec({"mode": "sync", "concurrency": 4, "latency": 10.0, "train_step_time": 4.0,
                      "train_contention": 0.5}, prompts=4, steps=10)  # fmt: skip
    assert step_mean(simulate_spec(sync), 2) == pytest.approx(14.0)
    # Asynchronous and trainer-bound (B = 1, a sample every 10 / 3 s with three in flight): samples run beside the
    # whole of every step, so each takes 4 x 1.5 = 6 s.
    busy = make_spec({"mode": "async", "concurrency": 64, "latency": 10.0, "train_step_time": 4.0,
                      "train_contention": 0.5}, prompts=1, staleness=2, steps=40)  # fmt: skip
    trace = simulate_spec(busy)
    assert step_mean(trace, 5) == pytest.approx(6.0)
    compute = trace.of("trainer.compute")
    assert len(compute) == 40 and list((compute["t1"] - compute["t0"]).iloc[5:]) == pytest.approx([6.0] * 35)


def test_contention_slows_only_the_part_of_a_step_that_overlaps_generation_by_hand():
    # One slot, B = 1, 3 s samples, 4 s steps at half speed (contention 1.0) while a sample runs; admission
    # started < v + 2. t=0: A starts. t=3: A ends, step 1 starts, B starts (ends 6) and the compute runs at half
    # speed; t=6: B ends, admission refuses a third sample until v = 1, the generator idles: 1.5 s of compute done,
    # 2.5 s left at full speed, so the step ends at 8.5. Every later step likewise: 3 s beside its sample (1.5 s of
    # work) + 2.5 s alone = 5.5 s (8 s if the whole step took the contention, 4 s without it).
    spec = make_spec({"mode": "async", "concurrency": 1, "latency": 3.0, "train_step_time": 4.0,
                      "train_contention": 1.0}, prompts=1, staleness=1, steps=6)  # fmt: skip
    trace = simulate_spec(spec)
    compute = trace.of("trainer.compute")
    assert list(zip(compute["t0"], compute["t1"], strict=True)) == [
        (3.0, 8.5), (8.5, 14.0), (14.0, 19.5), (19.5, 25.0), (25.0, 30.5), (30.5, 36.0)
    ]  # fmt: skip
    assert starts(trace)[:4] == [0.0, 3.0, 8.5, 14.0]


def test_a_drain_that_ends_between_steps_lets_admission_start_groups_again():
    # A batch (16) is twice the slots (8): after a drain the generator must keep refilling its slots until the
    # trainer's batch is complete, with no step end in between to wake it.
    spec = make_spec({"mode": "async", "concurrency": 8, "latency": {"mean": 10.0, "cv": 0.5}, "train_step_time": 1.0,
                      "drain_on_weight_push": True}, prompts=4, group=4, staleness=4, steps=20)  # fmt: skip
    trace = simulate_spec(spec)
    assert len(trace.of("trainer.step")) == 20
