"""The running samples' end times: the simulator's event queue, ordered by (end time, sample).

A min-heap of plain floats (a float comparison is several times cheaper than a (time, sample) tuple's, and no tuple
is built per sample) beside a dict from each end time to the sample ending then. Samples that end at the same time
(a fixed latency, or a coincidence) are listed in sample order under that time, so they come out exactly as
(time, sample) tuples would. The simulator's hot loops use `heap` and `ending` directly (a method call per sample
costs what the floats save) and call `tie` and `untie` for the rare shared time."""

from __future__ import annotations

import bisect
import heapq
import math

TIED = -1  # `ending` value of a time that several samples share; they are listed in `tied`


class EndTimes:
    def __init__(self) -> None:
        self.heap: list[float] = [math.inf]  # a sentinel: the queue never runs empty
        self.ending: dict[float, int] = {}
        self.tied: dict[float, list[int]] = {}

    def push(self, end: float, sample: int) -> None:
        heapq.heappush(self.heap, end)
        if end in self.ending:
            self.tie(end, sample)
        else:
            self.ending[end] = sample

    def tie(self, end: float, sample: int) -> None:
        """A second (or later) sample ending at `end`; the caller has pushed `end` again."""
        first = self.ending[end]
        if first != TIED:
            self.tied[end] = [first]
            self.ending[end] = TIED
        bisect.insort(self.tied[end], sample)

    def untie(self, end: float) -> int:
        """The lowest-numbered sample still listed at `end`, whose entry the caller has popped from `ending`."""
        samples = self.tied[end]
        sample = samples.pop(0)
        if samples:
            self.ending[end] = TIED
        else:
            del self.tied[end]
        return sample
