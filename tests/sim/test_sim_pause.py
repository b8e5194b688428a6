"""The generator's pause for a weight push and a validation pass (`sim.pause_on_weight_push`, `sim.validation`)
against steps worked by hand."""

from __future__ import annotations

import pytest

from benchbed.errors import SpecError
from benchbed.sim import simulate_spec

from .specs import make_spec

# One slot, one 10 s sample a step, one step ahead allowed; 3 s of compute and a 2 s sync at every step.
ONE_SLOT = {"mode": "async", "concurrency": 1, "latency": 10.0, "train_step_time": 3.0, "weight_sync_time": 2.0,
            "abort_on_weight_push": True}  # fmt: skip


def _ends(sim: dict, steps: int) -> list[float]:
    spec = make_spec(sim, prompts=1, group=1, staleness=1, steps=steps)
    return simulate_spec(spec).of("trainer.step")["t1"].tolist()


def test_abort_alone_lets_the_generator_run_through_the_sync():
    # Sample 1 starts at 10 and runs through step 1's compute (10-13) and sync (13-15): aborted and resumed at 15,
    # it still ends at 20. A step every 10 s: the sample's time.
    assert _ends(ONE_SLOT, 4) == [15.0, 25.0, 35.0, 45.0]


def test_pause_stops_the_generator_for_the_sync():
    # Paused at 13 with 7 s of sample 1 left, resumed at 15: it ends at 22, step 2 computes 22-25 and syncs 25-27.
    # A step every 12 s: the sample's 10 s and the 2 s it stood still.
    assert _ends({**ONE_SLOT, "pause_on_weight_push": True}, 4) == [15.0, 27.0, 39.0, 51.0]


def test_validation_holds_the_generator_after_every_nth_push():
    # Every 2nd push holds the generator 5 s more: after push 2 (27) sample 2 resumes at 32 instead of 27 and
    # ends at 39; step 3 computes 39-42 and syncs 42-44; step 4 ends at 56; push 4's validation holds sample 4
    # (7 s left) until 61, so it ends at 68 and step 5 ends at 68 + 3 + 2 = 73.
    sim = {**ONE_SLOT, "pause_on_weight_push": True, "validation": {"every_pushes": 2, "seconds": 5.0}}
    assert _ends(sim, 5) == [15.0, 27.0, 44.0, 56.0, 73.0]


def test_the_next_push_waits_for_a_validation_under_way():
    # Four 1 s samples end at 1 and the rest wait for version 1. Step 1: compute 1-4, sync 4-6, then a 20 s
    # validation until 26. Step 2 computes 6-9 from the queue, its sync waits for the validation: 26-28; likewise
    # 28-31, sync 48-50, and 50-53, sync 70-72. The queue is then empty; the generator resumes at 92 when push 4's
    # validation ends, its samples end at 93, and step 5 computes 93-96 and syncs 96-98.
    sim = {"mode": "async", "concurrency": 4, "latency": 1.0, "train_step_time": 3.0, "weight_sync_time": 2.0,
           "abort_on_weight_push": True, "pause_on_weight_push": True,
           "validation": {"every_pushes": 1, "seconds": 20.0}}  # fmt: skip
    trace = simulate_spec(make_spec(sim, prompts=1, group=1, staleness=3, steps=5))
    assert trace.of("trainer.step")["t1"].tolist() == [6.0, 28.0, 50.0, 72.0, 98.0]
    paused = trace.of("generator.paused")
    assert list(zip(paused["t0"].tolist(), paused["t1"].tolist(), strict=True))[0] == (1.0, 92.0)


@pytest.mark.parametrize(
    ("sim", "message"),
    [
        ({"mode": "async", "pause_on_weight_push": True}, "pause_on_weight_push needs"),
        ({"mode": "sync", "abort_on_weight_push": True, "pause_on_weight_push": True}, "pause_on_weight_push needs"),
        ({"mode": "async", "validation": {"every_pushes": 20, "seconds": 60.0}}, "validation needs"),
        ({**ONE_SLOT, "pause_on_weight_push": True, "validation": {"every_pushes": 0, "seconds": 1.0}}, "every_pushes"),
        ({**ONE_SLOT, "pause_on_weight_push": True, "validation": {"every_pushes": 1, "seconds": 0.0}}, "seconds"),
    ],
)
def test_bad_pause_settings_are_refused(sim: dict, message: str):
    with pytest.raises(SpecError, match=message):
        simulate_spec(make_spec(sim))
