"""Inference engines that share their decode speed among the sequences they run (processor sharing, config.Decode).

Each engine keeps a virtual clock that advances at the speed of one of its sequences relative to a sequence alone:
r(b) = (a + c) / (a + c x b) for b running sequences, a decode iteration taking a + c x b seconds. A sample's drawn
latency is its work in virtual seconds, so every sequence on an engine progresses at the same rate and they finish
in the order of their virtual finish times. Only each engine's next finish is an event in the simulator's queue;
an arrival or departure reschedules it, and an event whose time no longer matches `s_end` is stale. A resumed
sequence (aborted earlier, its KV cache discarded) first makes its engine prefill its prompt and generated tokens
again (`reprefill_s_per_token` each); the engine's clock stands still until that prefill ends.
"""

from __future__ import annotations

import heapq
import math

from benchbed.sim.config import Decode
from benchbed.sim.end_times import EndTimes


class DecodeEngines:
    def __init__(
        self, spec: Decode, s_end: list[float], ends: EndTimes, prompt_tokens: int = 0, tokens_per_s: float = 0.0
    ) -> None:
        n = spec.engines
        self.a, self.c = spec.step_s, spec.step_s_per_seq
        self.reprefill_s, self.prompt_tokens, self.tokens_per_s = (
            spec.reprefill_s_per_token,
            prompt_tokens,
            tokens_per_s,
        )
        self.prefilling_until = [0.0] * n  # real time until which each engine prefills resumed sequences
        self.drawn: dict[int, float] = {}  # each started sample's whole work (virtual seconds), for what it generated
        self.s_end, self.ends = s_end, ends  # the simulator's scheduled ends and event queue, shared
        self.virtual = [0.0] * n  # virtual seconds each engine has run its sequences for
        self.updated = [0.0] * n  # real time of each engine's last update
        self.running: list[list[tuple[float, int]]] = [[] for _ in range(n)]  # heaps of (virtual finish, sample)
        self.next_sample = [-1] * n  # the sample whose finish is each engine's pending event
        self.engine_of: dict[int, int] = {}

    def rate(self, b: int) -> float:
        """Virtual seconds per real second with b sequences running (1 for a sequence alone)."""
        return (self.a + self.c) / (self.a + self.c * b)

    def arrive(self, now: float, sample: int, work: float) -> None:
        """Start `work` virtual seconds of `sample` on the least-loaded engine (the lowest-numbered on a tie); a
        resumed sample first holds the engine for the prefill of its prompt and generated tokens."""
        running = self.running
        engine = min(range(len(running)), key=lambda e: len(running[e]))
        self._advance(engine, now)
        if self.reprefill_s:
            drawn = self.drawn.setdefault(sample, work)
            if drawn > work:  # a resume: drawn - work virtual seconds were generated before the abort
                tokens = self.prompt_tokens + self.tokens_per_s * (drawn - work)
                self.prefilling_until[engine] = max(now, self.prefilling_until[engine]) + self.reprefill_s * tokens
        heapq.heappush(running[engine], (self.virtual[engine] + work, sample))
        self.engine_of[sample] = engine
        self._schedule(engine, now)

    def depart(self, now: float, sample: int) -> None:
        """`sample`, its engine's next finish, finished now."""
        engine = self.engine_of.pop(sample)
        self._advance(engine, now)
        heapq.heappop(self.running[engine])
        self._schedule(engine, now)

    def remove(self, now: float, sample: int) -> float:
        """Abort a running `sample`; returns its remaining work in virtual seconds."""
        engine = self.engine_of.pop(sample)
        self._advance(engine, now)
        running = self.running[engine]
        at = next(i for i, (_, s) in enumerate(running) if s == sample)
        finish = running[at][0]
        running[at] = running[-1]
        running.pop()
        heapq.heapify(running)
        self._schedule(engine, now)
        return max(0.0, finish - self.virtual[engine])

    def _advance(self, engine: int, now: float) -> None:
        """Move the engine's virtual clock to `now` at the rate of the sequences it has run since its last update."""
        b = len(self.running[engine])
        if b:
            self.virtual[engine] += max(
                0.0, now - max(self.updated[engine], self.prefilling_until[engine])
            ) * self.rate(b)
        self.updated[engine] = now

    def _schedule(self, engine: int, now: float) -> None:
        """Queue the engine's next finish, invalidating the event it had queued before."""
        old, running, s_end = self.next_sample[engine], self.running[engine], self.s_end
        if not running:
            if old >= 0:
                s_end[old] = math.nan
            self.next_sample[engine] = -1
            return
        finish, sample = running[0]
        end = max(now, self.prefilling_until[engine]) + max(0.0, finish - self.virtual[engine]) / self.rate(
            len(running)
        )
        if sample == old and s_end[sample] == end:
            return  # the queued event still holds
        if old >= 0:
            s_end[old] = math.nan
        s_end[sample] = end
        self.next_sample[engine] = sample
        self.ends.push(end, sample)
