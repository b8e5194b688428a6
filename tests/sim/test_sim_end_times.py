"""The simulator's event queue gives samples in (end time, sample) order, shared end times included."""

from __future__ import annotations

import heapq
import random

from benchbed.sim.end_times import TIED, EndTimes


def drain(ends: EndTimes) -> list[tuple[float, int]]:
    """Pop every end time the way Simulation.finish_samples does (heap, then `ending`, then `untie` when TIED)."""
    out = []
    while (end := heapq.heappop(ends.heap)) != float("inf"):
        sample = ends.ending.pop(end)
        out.append((end, ends.untie(end) if sample == TIED else sample))
    return out


def test_samples_come_out_by_end_time_then_sample_number():
    rng = random.Random(3)
    pairs = [(float(rng.randrange(20)), sample) for sample in range(300)]  # 20 distinct times: many ties
    rng.shuffle(pairs)  # pushed in no particular sample order (a resumed sample can be pushed late)
    ends = EndTimes()
    for end, sample in pairs:
        ends.push(end, sample)
    assert drain(ends) == sorted(pairs)
    assert ends.heap == [] and ends.ending == {} and ends.tied == {}


def test_a_time_can_be_shared_again_after_its_samples_left():
    ends = EndTimes()
    ends.push(5.0, 7)
    ends.push(5.0, 2)
    ends.push(1.0, 9)
    assert drain(ends) == [(1.0, 9), (5.0, 2), (5.0, 7)]
    ends.heap.append(float("inf"))
    ends.push(5.0, 4)
    ends.push(5.0, 1)
    ends.push(5.0, 3)
    assert drain(ends) == [(5.0, 1), (5.0, 3), (5.0, 4)]
