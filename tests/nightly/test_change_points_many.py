"""`many_change_points` (all series' optimal partitions in one vectorised pass) against the search it replaced: one
series at a time, one start index array per end night. The same change points for every series, ties included."""

from __future__ import annotations

import math

import numpy as np

from benchbed.nightly.stats import _settle, change_points, many_change_points


def one_series_at_a_time(values: list[float], min_effect: float, min_size: int = 2) -> list[int]:
    """The change-point search as benchbed ran it before it was vectorised over series (commit c159943)."""
    signal = np.asarray(values, dtype=float)
    n = len(signal)
    if n < 1 + min_size:
        return []
    diffs = np.sort(np.abs(np.diff(signal)))
    sigma = 1.4826 * float(diffs[(len(diffs) - 1) // 2]) / math.sqrt(2)
    scale = float(np.median(np.abs(signal))) or 1.0
    sigma = max(sigma, 1e-3 * scale)
    penalty = sigma**2 * (4 + 2 * math.log(n)) * (1 + 8 / n)
    s1 = np.concatenate([[0.0], np.cumsum(signal)])
    s2 = np.concatenate([[0.0], np.cumsum(signal**2)])
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    previous = np.zeros(n + 1, dtype=int)
    every_start = np.arange(n + 1)
    for end in range(1, n + 1):
        starts = every_start[: max(end - min_size, 0) + 1]
        length = end - starts
        total = best[starts] + (s2[end] - s2[starts] - (s1[end] - s1[starts]) ** 2 / length) + penalty
        i = int(np.argmin(total))
        best[end], previous[end] = total[i], starts[i]
    bounds, end = [], n
    while end > 0:
        end = int(previous[end])
        bounds.append(end)
    bounds = sorted(bounds)[1:]
    while True:
        kept = _settle(signal, bounds, min_effect, min_size)
        if kept == bounds:
            return bounds
        bounds = kept


def seeded_series(seed: int) -> list[float]:
    """Noise, steps, ramps, constant stretches, repeated (tied) values and rounded levels, 1 to 400 nights."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 401))
    kind = seed % 6
    if kind == 0:  # noise with up to four steps
        series = rng.normal(10, 1, n)
        for k in rng.integers(0, n, int(rng.integers(0, 5))):
            series[k:] += rng.choice([-1, 1]) * rng.uniform(0.5, 6)
    elif kind == 1:  # a constant series
        series = np.full(n, float(rng.integers(0, 3)))
    elif kind == 2:  # few distinct values: equal costs for several splits
        series = rng.choice([3.0, 4.0, 5.0], n)
    elif kind == 3:  # levels held a few nights each, exactly repeated
        series = np.repeat(rng.choice([0.25, 0.5, 0.75], n), rng.integers(1, 6, n))[:n]
    elif kind == 4:  # noise rounded to two digits around a slow ramp
        series = np.round(np.linspace(1, 2, n) + rng.normal(0, 0.05, n), 2)
    else:  # small uniform ratios, as the benchmark's store holds
        series = rng.random(n)
    return [float(v) for v in series]


def test_many_series_at_once_give_the_change_points_of_each_alone():
    series = [seeded_series(seed) for seed in range(200)]
    effects = [(0.0, 0.01, 0.05, 0.2)[seed % 4] for seed in range(200)]
    expected = [one_series_at_a_time(s, e) for s, e in zip(series, effects, strict=True)]
    assert many_change_points(series, effects) == expected
    assert [change_points(s, e) for s, e in zip(series, effects, strict=True)] == expected
    assert sum(map(bool, expected)) >= 50  # the comparison covers series with change points, not only empty ones
    assert many_change_points(series, effects, min_size=3) == [one_series_at_a_time(s, e, 3) for s, e in
                                                               zip(series, effects, strict=True)]  # fmt: skip


def test_nan_nights_short_series_and_no_series():
    """A night without a value makes its series' costs NaN (the argmin then takes the first NaN), as before."""
    series = [[1.0, float("nan"), 1.0, 5.0, 5.0, 5.0], [2.0], [], [1.0, 2.0, 3.0], [4.0] * 3 + [8.0] * 3]
    assert many_change_points(series, [0.05] * 5) == [one_series_at_a_time(s, 0.05) for s in series]
    assert many_change_points([[4.0] * 3 + [8.0] * 3], [0.05]) == [[3]]
    assert many_change_points([], []) == []
