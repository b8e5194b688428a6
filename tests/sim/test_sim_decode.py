"""Decode speed shared by the sequences on an engine (sim.decode), against finish times worked by hand."""

from __future__ import annotations

import heapq
import math

import pytest

from benchbed.errors import SpecError
from benchbed.sim import simulate_spec
from benchbed.sim.config import Decode
from benchbed.sim.decode import DecodeEngines
from benchbed.sim.end_times import EndTimes

from .specs import make_spec


def finish_times(arrivals: list[tuple[float, int, float]], engines: int = 1) -> dict[int, float]:
    """Finish times of samples given as (arrival time, sample, work) on engines with a = c = 1 s."""
    s_end = [math.nan] * len(arrivals)
    ends = EndTimes()
    decode = DecodeEngines(Decode(engines=engines, step_s=1.0, step_s_per_seq=1.0), s_end, ends)
    pending, done = sorted(arrivals), {}
    while len(done) < len(arrivals):
        if pending and pending[0][0] <= ends.heap[0]:
            now, sample, work = pending.pop(0)
            decode.arrive(now, sample, work)
            continue
        now = heapq.heappop(ends.heap)
        sample = ends.ending.pop(now)
        if sample < 0:
            sample = ends.untie(now)
        if now == s_end[sample]:  # else stale: the engine was rescheduled since
            decode.depart(now, sample)
            done[sample] = now
    return done


def test_two_sequences_share_one_engine():
    # Work 10 and 20 from t = 0: with 2 running an iteration takes 1 + 2 = 3 s against 2 s alone, so each runs at
    # 2/3 speed; the first ends at 10 / (2/3) = 15, the second then has 20 - 10 = 10 left alone: 25.
    assert finish_times([(0.0, 0, 10.0), (0.0, 1, 20.0)]) == pytest.approx({0: 15.0, 1: 25.0})


def test_an_arrival_slows_the_running_sequence():
    # Sample 0 runs alone for 5 s (5 of its 10 done); sample 1 (work 20) joins: both at 2/3 speed, sample 0 ends at
    # 5 + 5 / (2/3) = 12.5 with sample 1 at 5 done; sample 1 then runs alone for 15: 27.5.
    assert finish_times([(0.0, 0, 10.0), (5.0, 1, 20.0)]) == pytest.approx({0: 12.5, 1: 27.5})


def test_least_loaded_engine_takes_each_arrival():
    # Two engines: samples 0 and 1 each alone on one (10 and 20), sample 2 (work 6) joins engine 0 at t = 0 too:
    # engine 0 at 2/3 speed ends sample 2 at 9, then sample 0 (4 left) alone at 13; sample 1 alone ends at 20.
    got = finish_times([(0.0, 0, 10.0), (0.0, 1, 20.0), (0.0, 2, 6.0)], engines=2)
    assert got == pytest.approx({0: 13.0, 1: 20.0, 2: 9.0})


def test_a_group_on_one_engine_finishes_together():
    # Sync, one group of 4 fixed 10 s samples on one engine with a = 1, c = 1: rate (1 + 1) / (1 + 4) = 0.4, so all
    # finish at 25 s; each step is 25 s of generation plus 5 s of training.
    spec = make_spec({"mode": "sync", "concurrency": 4, "latency": 10.0, "train_step_time": 5.0,
                      "decode": {"engines": 1, "step_s": 1.0, "step_s_per_seq": 1.0}},
                     prompts=1, group=4, steps=3)  # fmt: skip
    steps = simulate_spec(spec).of("trainer.step")
    assert list(steps.t1.astype(float)) == pytest.approx([30.0, 60.0, 90.0])


def test_decode_without_per_sequence_cost_changes_nothing():
    # c = 0: every sequence keeps its speed alone, so the run is the one without decode.
    sim = {"mode": "async", "concurrency": 64, "latency": {"mean": 20.0, "cv": 1.0}, "train_step_time": 5.0}
    plain = simulate_spec(make_spec(sim, prompts=8, group=4, staleness=1, steps=20)).of("rollout")
    sim["decode"] = {"engines": 4, "step_s": 1.0, "step_s_per_seq": 0.0}
    shared = simulate_spec(make_spec(sim, prompts=8, group=4, staleness=1, steps=20)).of("rollout")
    assert list(shared.t1.astype(float)) == pytest.approx(list(plain.t1.astype(float)))


def test_decode_with_partial_rollout_keeps_the_remaining_work():
    # APRIL-style rounds with aborts: every trained sample still did its whole drawn work, so no time is lost and
    # every step trains 8 samples.
    spec = make_spec({"mode": "sync", "concurrency": 64, "latency": {"mean": 20.0, "cv": 1.0}, "train_step_time": 5.0,
                      "oversample": {"factor": 2.0, "policy": "partial"},
                      "decode": {"engines": 2, "step_s": 1.0, "step_s_per_seq": 0.1}},
                     prompts=2, group=4, steps=30)  # fmt: skip
    rollouts = simulate_spec(spec).of("rollout")
    trained = rollouts[rollouts.v_train.astype(int) >= 0]
    assert (trained.groupby("v_train").size() == 8).all()


def test_decode_rejects_environment_time():
    with pytest.raises(SpecError, match="decode models LLM time alone; it cannot be combined with turns"):
        make_spec({"turns": {"count": 1, "env_s": {"mean": 1.0}},
                   "decode": {"engines": 1, "step_s": 1.0, "step_s_per_seq": 1.0}})  # fmt: skip
