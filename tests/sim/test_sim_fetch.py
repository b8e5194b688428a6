"""The trainer's fetch-and-assemble time per sample (`sim.fetch_s_per_sample`) against steps worked by hand."""

from __future__ import annotations

import pytest

from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.sim import simulate_spec

from .specs import make_spec


def test_fetch_time_is_serial_with_compute_and_counted_as_waiting_when_trainer_bound():
    # Samples of 1 s and room for 10 steps ahead: the batch is always queued when a step starts. B = 4 x 4 = 16
    # samples at 0.25 s each is 4 s of fetching before 10 s of compute: every step after the first takes 14 s, and
    # the trainer waits 4 of them (idle 4 / 14).
    spec = make_spec({"mode": "async", "concurrency": 64, "latency": 1.0, "train_step_time": 10.0,
                      "fetch_s_per_sample": 0.25}, prompts=4, group=4, staleness=10, steps=20)  # fmt: skip
    trace = simulate_spec(spec)
    steps = trace.of("trainer.step")
    assert (steps["t1"] - steps["t0"]).tolist()[1:] == [14.0] * 19
    waits = trace.of("trainer.wait")
    assert (waits["t1"] - waits["t0"]).tolist()[1:] == [4.0] * 19
    m = {k: v.value for k, v in compute_metrics(trace, warmup_steps=1).items()}
    assert m["trainer_idle_ratio"] == pytest.approx(4.0 / 14.0)


def test_fetch_time_adds_to_a_synchronous_step_after_generation():
    # Colocated sync, one group of 4 samples of 30 s per step: generate 30 s, fetch 4 x 0.5 = 2 s, train 10 s,
    # sync 1 s: a 43 s step of which 32 s wait for data.
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": 30.0, "train_step_time": 10.0,
                      "weight_sync_time": 1.0, "fetch_s_per_sample": 0.5}, prompts=1, group=4, steps=5)  # fmt: skip
    trace = simulate_spec(spec)
    assert trace.of("trainer.step")["t1"].tolist() == [43.0, 86.0, 129.0, 172.0, 215.0]
    m = {k: v.value for k, v in compute_metrics(trace, warmup_steps=0).items()}
    assert m["trainer_idle_ratio"] == pytest.approx(32.0 / 43.0)


def test_no_fetch_time_by_default_and_never_negative():
    spec = make_spec({"mode": "async", "concurrency": 4, "latency": 1.0, "train_step_time": 10.0},
                     staleness=10, steps=3)  # fmt: skip
    steps = simulate_spec(spec).of("trainer.step")
    assert (steps["t1"] - steps["t0"]).tolist()[1:] == [10.0, 10.0]
    with pytest.raises(SpecError, match="fetch_s_per_sample"):
        simulate_spec(make_spec({"mode": "async", "fetch_s_per_sample": -1.0}))
