"""Random numbers of the simulator, drawn in numpy blocks and handed out as Python floats (fast in the event loop).

The order in which blocks are drawn from the one generator is part of a run's identity: the same seed gives the
same trace only while every draw happens in the same order."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import numpy as np

from benchbed.columns import pooled
from benchbed.sim.config import Latency, PassRate, SimConfig, Spread

_BLOCK = 1 << 14


class Draws:
    """Random numbers pre-drawn in blocks and handed out as Python floats (fast in the event loop)."""

    def __init__(self, draw_block: Callable[[int], np.ndarray]) -> None:
        self._draw_block = draw_block
        self._buffer: list[float] = []
        self._pos = 0

    def take(self, n: int) -> list[float]:
        if self._pos + n > len(self._buffer):
            self._buffer = self._buffer[self._pos :] + self._draw_block(max(_BLOCK, n)).tolist()
            self._pos = 0
        out = self._buffer[self._pos : self._pos + n]
        self._pos += n
        return out

    def take_one(self) -> float:
        """The next number: take(1)[0] without the list (refills at the same moment, so the stream is the same)."""
        if self._pos == len(self._buffer):
            self._buffer = self._draw_block(_BLOCK).tolist()
            self._pos = 0
        self._pos += 1
        return self._buffer[self._pos - 1]


class KeptDraws:
    """Random numbers drawn in the same blocks, at the same moments, as Draws, but kept as numpy blocks and handed
    out as positions in the stream: a consumer that needs its numbers only after the run (the samples' reward
    uniforms) reserves them instead of turning each into a Python float in the event loop."""

    def __init__(self, draw_block: Callable[[int], np.ndarray]) -> None:
        self._draw_block = draw_block
        self._blocks: list[np.ndarray] = []
        self._starts: list[int] = []  # stream position of each block's first number
        self._drawn = 0
        self._used = 0

    def reserve(self, n: int) -> int:
        """Reserve the next n numbers; returns the position of the first. A block is drawn exactly when Draws.take
        would draw one, so every other stream of the generator sees the same draws."""
        first = self._used
        if first + n > self._drawn:
            block = self._draw_block(max(_BLOCK, n))
            self._blocks.append(block)
            self._starts.append(self._drawn)
            self._drawn += len(block)
        self._used = first + n
        return first

    def take_one(self) -> float:
        """The next number, as Draws.take_one gives it."""
        return float(self.window(self.reserve(1), 1)[0])

    def window(self, first: int, n: int) -> np.ndarray:
        """The n reserved numbers from position `first`."""
        at = bisect.bisect_right(self._starts, first) - 1
        if first + n <= self._starts[at] + len(self._blocks[at]):
            offset = first - self._starts[at]
            return self._blocks[at][offset : offset + n]
        last = bisect.bisect_right(self._starts, first + n - 1)  # the blocks the window spans, no more
        return np.concatenate(self._blocks[at:last])[first - self._starts[at] :][:n]

    def all(self) -> np.ndarray:
        """Every number drawn so far, in stream order (position i at index i)."""
        return np.concatenate(self._blocks, out=pooled(self._drawn, float)) if self._blocks else np.empty(0)


def latency_draws(latency: Latency, rng: np.random.Generator) -> Draws:
    """Seconds per sample of the configured latency distribution."""
    if latency.dist == "lognormal":
        sigma2 = math.log1p(latency.cv**2)
        mu = math.log(latency.mean) - sigma2 / 2
        return Draws(lambda n: rng.lognormal(mu, math.sqrt(sigma2), n))
    if latency.dist == "empirical":
        values = np.asarray(latency.values, dtype=float)
        return Draws(lambda n: rng.choice(values, n))
    return Draws(lambda n: np.full(n, latency.mean))


def mean_latency(latency: Latency) -> float:
    """The latency distribution's mean in seconds."""
    return float(np.mean(latency.values)) if latency.dist == "empirical" and latency.values else latency.mean


def spread_draw(spread: Spread, rng: np.random.Generator, n: int) -> np.ndarray:
    """n lognormal draws with the spread's mean and cv (all equal to the mean when cv = 0)."""
    if spread.cv == 0:
        return np.full(n, spread.mean)
    sigma2 = math.log1p(spread.cv**2)
    return rng.lognormal(math.log(spread.mean) - sigma2 / 2, math.sqrt(sigma2), n)


def saturation_factor(cfg: SimConfig) -> float:
    """LLM time multiplier of throughput-bound engines: max(1, concurrency / (engines × seqs_per_engine))."""
    sat = cfg.saturation
    return 1.0 if sat is None else max(1.0, cfg.concurrency / (sat.engines * sat.seqs_per_engine))


def sample_block(cfg: SimConfig, cap: int, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """Draws of (latency, response tokens) per sample as a (2, n) array: LLM time (saturated, truncated at the
    response cap when tokens are modelled) plus environment time over the sample's tool calls, plus the time its
    prefills add (`prefill`)."""
    llm = latency_draws(cfg.latency, rng)._draw_block
    factor = saturation_factor(cfg)
    mean_llm = mean_latency(cfg.latency) * factor

    def block(n: int) -> np.ndarray:
        time = llm(n) * factor
        tokens = np.full(n, -1.0)
        if cfg.tokens is not None:
            tokens = cfg.tokens.response_mean * time / mean_llm
            over = tokens > cap
            tokens[over] = cap
            time[over] = cap / cfg.tokens.response_mean * mean_llm
            tokens = np.maximum(1.0, np.round(tokens))
        counts = np.zeros(n, dtype=np.int64)
        if cfg.turns is not None:
            turns = cfg.turns
            counts = rng.poisson(turns.count, n) if turns.dist == "poisson" else np.full(n, round(turns.count))
            per_call = spread_draw(turns.env_s, rng, int(counts.sum()))
            time = time + np.bincount(np.repeat(np.arange(n), counts), weights=per_call, minlength=n)
        if cfg.prefill is not None:  # one prefill for the prompt, one per tool result
            time = time + (counts + 1) * cfg.prefill.per_prefill_s()
        return np.stack([time, tokens])

    return block


class PairDraws:
    """Like Draws, for (latency, tokens) pairs."""

    def __init__(self, draw_block: Callable[[int], np.ndarray]) -> None:
        self._draw_block = draw_block
        self._buffer: list[tuple[float, float]] = []
        self._pos = 0

    def take(self, n: int) -> list[tuple[float, float]]:
        if self._pos + n > len(self._buffer):
            block = self._draw_block(max(_BLOCK, n))
            self._buffer = self._buffer[self._pos :] + list(zip(block[0].tolist(), block[1].tolist(), strict=True))
            self._pos = 0
        out = self._buffer[self._pos : self._pos + n]
        self._pos += n
        return out


def pass_rate_draws(pass_rate: PassRate, rng: np.random.Generator) -> Draws:
    """Per-group probability that a sample is rewarded."""
    if pass_rate.dist == "beta":
        return Draws(lambda n: rng.beta(pass_rate.a, pass_rate.b, n))
    if pass_rate.dist == "mixture":

        def mixture(n: int) -> np.ndarray:
            u = rng.random(n)
            p = rng.beta(pass_rate.a, pass_rate.b, n)
            p[u < pass_rate.always + pass_rate.never] = 0.0
            p[u < pass_rate.always] = 1.0
            return p

        return Draws(mixture)
    return Draws(lambda n: np.full(n, pass_rate.p))
