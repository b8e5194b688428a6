"""Re-prefill of a resumed sequence on its decode engine (sim.decode.reprefill_s_per_token), against cases worked by
hand: the engine stops decoding while it prefills the resumed sequence's prompt and generated tokens again."""

from __future__ import annotations

import math

import pytest

from benchbed.errors import SpecError
from benchbed.sim import simulate_spec
from benchbed.sim.config import Decode
from benchbed.sim.decode import DecodeEngines
from benchbed.sim.end_times import EndTimes

from .specs import make_spec


def engine(reprefill_s_per_token: float) -> tuple[DecodeEngines, list[float]]:
    """One engine with a = c = 1 s, 100 prompt tokens and 10 response tokens per second alone."""
    s_end = [math.nan, math.nan]
    spec = Decode(engines=1, step_s=1.0, step_s_per_seq=1.0, reprefill_s_per_token=reprefill_s_per_token)
    return DecodeEngines(spec, s_end, EndTimes(), prompt_tokens=100, tokens_per_s=10.0), s_end


@pytest.mark.parametrize(("per_token", "ends"), [(0.0, (15.0, 25.0)), (0.01, (16.2, 26.2))])
def test_a_resumed_sequence_holds_its_engine_for_its_prefill(per_token: float, ends: tuple[float, float]):
    # Work 10 and 20 from t = 0 at 2/3 speed each (an iteration of 2 takes 3 s against 2 s alone); no prefill at a
    # first start. At t = 3 sample 0 is aborted with 2 virtual seconds done (8 left) and resumes at once: it holds
    # 100 + 10 x 2 = 120 tokens, 1.2 s of prefill at 0.01 s a token, during which neither sequence advances. Then both
    # run at 2/3 again: sample 0 ends at 3 + 1.2 + 8 / (2/3) = 16.2; sample 1, 2 + 8 = 10 done, runs its last 10
    # alone: 26.2. Without the prefill, 15 and 25.
    decode, s_end = engine(per_token)
    decode.arrive(0.0, 0, 10.0)
    decode.arrive(0.0, 1, 20.0)
    assert s_end[0] == pytest.approx(15.0)
    assert decode.remove(3.0, 0) == pytest.approx(8.0)
    decode.arrive(3.0, 0, 8.0)
    assert s_end[0] == pytest.approx(ends[0])
    decode.depart(s_end[0], 0)
    assert s_end[1] == pytest.approx(ends[1])


def test_an_interrupting_push_pays_the_prefill_by_hand():
    # Async, one slot, one engine with c = 0 (a sequence runs at its speed alone), fixed 10 s samples, 4 s steps, a
    # push after every step aborts the sample in flight. t = 0: sample 0 (ends 10); step 1 at 10-14 while sample 1
    # starts at 10. t = 14: the push aborts sample 1 with 4 s done and resumes it: 100 + 10 x 4 = 140 tokens at
    # 0.01 s, 1.4 s of prefill, so it ends at 14 + 1.4 + 6 = 21.4 and step 2 runs 21.4-25.4 (without: 20-24).
    sim = {"mode": "async", "concurrency": 1, "latency": 10.0, "train_step_time": 4.0, "abort_on_weight_push": True,
           "tokens": {"prompt": 100, "response_mean": 100.0},
           "decode": {"engines": 1, "step_s": 1.0, "step_s_per_seq": 0.0, "reprefill_s_per_token": 0.01}}  # fmt: skip
    steps = simulate_spec(make_spec(sim, prompts=1, staleness=1, steps=2, max_response_tokens=1000)).of("trainer.step")
    assert [float(t) for t in steps["t1"]] == pytest.approx([14.0, 25.4])
    sim["decode"] = {**sim["decode"], "reprefill_s_per_token": 0.0}
    steps = simulate_spec(make_spec(sim, prompts=1, staleness=1, steps=2, max_response_tokens=1000)).of("trainer.step")
    assert [float(t) for t in steps["t1"]] == pytest.approx([14.0, 24.0])


def test_reprefill_needs_tokens():
    with pytest.raises(SpecError, match="reprefill_s_per_token needs sim.tokens"):
        make_spec({"decode": {"engines": 1, "step_s": 1.0, "step_s_per_seq": 1.0, "reprefill_s_per_token": 0.01}})
