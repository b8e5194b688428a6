"""The regression gate and change points: pure statistics, then simulated nights measured like real runs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from benchbed.metrics import compute_metrics
from benchbed.nightly.stats import (
    EXACT_LIMIT,
    change_points,
    compare_values,
    metric_direction,
    min_p_value,
    rank_test_p_value,
)
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec


def test_direction_comes_from_the_registry():
    assert metric_direction("trainer_throughput_sps") is True
    assert metric_direction("trainer_idle_ratio") is False
    assert metric_direction("framework_trainer_idle_ratio") is False
    assert metric_direction("rate_gap") is None and metric_direction("no_such_metric") is None


def test_min_p_value_is_the_exact_two_sided_floor():
    assert min_p_value(5, 5) == pytest.approx(2 / 252)
    assert min_p_value(25, 5) == pytest.approx(2 / math.comb(30, 5))
    assert min_p_value(0, 5) == 1.0


def test_too_few_values_are_insufficient_data_never_a_pass():
    result = compare_values([10.0, 10.1, 9.9], [5.0], higher_is_better=True)
    assert result.verdict == "insufficient_data" and result.p_value is None
    assert (result.n_baseline, result.n_candidate) == (3, 1)
    assert compare_values([], [1.0, 2.0, 3.0], True).verdict == "insufficient_data"
    # 2 candidates against 6 baseline values can at best reach p = 2/28 > 0.05; against 8, 2/45 < 0.05
    assert compare_values([10.0] * 6, [9.0, 9.0], True).verdict == "insufficient_data"
    assert compare_values(list(np.linspace(9.9, 10.1, 8)), [9.0, 9.1], True).verdict == "regression"


def test_shift_direction_decides_regression_or_improvement():
    rng = np.random.default_rng(1)
    base = 10 + rng.normal(0, 0.1, 25)
    slower = 9 + rng.normal(0, 0.1, 5)
    lower_is_worse = compare_values(base, slower, higher_is_better=True)
    assert lower_is_worse.verdict == "regression"
    assert lower_is_worse.relative_change == pytest.approx(np.median(slower) / np.median(base) - 1)
    assert lower_is_worse.p_value < 0.001 and lower_is_worse.n_baseline == 25
    assert compare_values(base, slower, higher_is_better=False).verdict == "improvement"


def test_a_significant_but_small_change_is_unchanged():
    base = np.linspace(10.0, 10.01, 20)
    result = compare_values(base, [10.2, 10.21, 10.22, 10.23], higher_is_better=True)  # +2%, p tiny
    assert result.p_value < 0.01 and result.verdict == "unchanged" and "2.1% < 5%" in result.reason
    assert compare_values([5.0] * 10, [5.0] * 5, True).verdict == "unchanged"


def test_zero_baseline_has_no_relative_change_but_a_real_shift_counts():
    result = compare_values([0.0] * 10, [0.2, 0.3, 0.25, 0.2], higher_is_better=False)
    assert result.relative_change is None and result.verdict == "regression"


def _exhaustive_p(baseline: list[int], candidate: list[int]) -> float:
    """Two-sided permutation p-value by listing every split: average ranks, |rank sum − its mean| as extreme."""
    pooled = sorted([*baseline, *candidate])
    rank = {v: (pooled.index(v) + 1 + len(pooled) - pooled[::-1].index(v)) / 2 for v in pooled}
    ranks = [rank[v] for v in [*baseline, *candidate]]
    m = len(candidate)
    mean = m * (len(pooled) + 1) / 2
    observed = abs(sum(ranks[len(baseline) :]) - mean)
    splits = list(itertools.combinations(ranks, m))
    return sum(abs(sum(split) - mean) >= observed - 1e-9 for split in splits) / len(splits)


def test_rank_test_p_value_equals_the_exhaustive_permutation_test_on_small_integer_samples():
    """400 random pairs of samples of 1 to 8 values drawn from 0..3 (ties everywhere), as an exhaustive test."""
    rng = np.random.default_rng(26)
    for _ in range(400):
        baseline = rng.integers(0, 4, int(rng.integers(1, 9))).tolist()
        candidate = rng.integers(0, 4, int(rng.integers(1, 6))).tolist()
        assert rank_test_p_value(baseline, candidate) == pytest.approx(_exhaustive_p(baseline, candidate), rel=1e-12)


def test_the_tie_case_of_issue_26_is_unchanged_at_p_0_0606():
    """staleness_max [1,1,1,1,1,2,2] against [2,2,2,2]: 20 of the C(11, 4) = 330 splits are as extreme."""
    result = compare_values([1, 1, 1, 1, 1, 2, 2], [2, 2, 2, 2], higher_is_better=False)
    assert result.verdict == "unchanged" and result.p_value == pytest.approx(20 / 330, abs=1e-15)
    assert result.reason == "p = 0.0606 ≥ 0.05"
    seven_against_three = compare_values([1, 2, 3, 4, 5, 6, 7], [11, 12, 13], higher_is_better=False)
    assert seven_against_three.p_value == pytest.approx(2 / 120) and seven_against_three.verdict == "regression"


def test_beyond_the_exact_limit_the_normal_approximation_with_tie_correction_is_used():
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(5)
    for baseline, candidate in (
        (rng.normal(0, 1, 60), rng.normal(0.3, 1, 60)),
        (rng.integers(0, 5, 70), rng.integers(0, 5, 40)),
    ):
        assert len(baseline) + len(candidate) > EXACT_LIMIT
        asymptotic = mannwhitneyu(candidate, baseline, method="asymptotic").pvalue
        assert rank_test_p_value(baseline, candidate) == pytest.approx(asymptotic, rel=1e-9)
    baseline, candidate = rng.normal(0, 1, 50), rng.normal(0.3, 1, 50)  # at the limit: still exact
    assert rank_test_p_value(baseline, candidate) == pytest.approx(
        mannwhitneyu(candidate, baseline, method="exact").pvalue
    )


def test_change_points_find_a_level_shift_and_nothing_in_noise():
    rng = np.random.default_rng(7)
    noise = rng.normal(0, 0.05, 24)
    assert change_points(10 + noise) == []
    shifted = np.concatenate([10 + noise[:12], 11 + noise[12:]])
    assert change_points(shifted) == [12]
    assert change_points([3.0] * 10) == []
    assert change_points([1.0, 2.0]) == []  # too short for a first night and a new level of two


def test_change_points_ignore_shifts_below_the_minimum_effect():
    series = [10.0] * 8 + [10.2] * 8  # a clean 2% step
    assert change_points(series, min_effect=0.05) == []
    assert change_points(series, min_effect=0.01) == [8]


def test_the_issue_25_sequence_six_nights_then_a_slower_trainer():
    """Six identical nights at 0.5333, then 0.4706: no change point after the changed night (it is that night's
    verdict), and exactly night 7 (index 6) after the second night at the new level."""
    assert change_points([0.5333] * 6 + [0.4706]) == []
    assert change_points([0.5333] * 6 + [0.4706] * 2) == [6]
    assert change_points([0.5333] * 6 + [0.4706] * 3) == [6]


@pytest.mark.parametrize("n", [3, 4, 5, 8, 13, 30])
def test_a_noiseless_step_at_night_k_gives_exactly_k(n):
    """Every position with a new level of at least two nights (the second night, the middle, the second-to-last)
    gives exactly [k], in both directions; a step on the last night alone gives none yet."""
    for k in range(1, n - 1):
        for step in (-0.3, 0.06, 2.0):
            series = [5.0] * k + [5.0 * (1 + step)] * (n - k)
            assert change_points(series) == [k], (n, k, step)
    assert change_points([5.0] * (n - 1) + [7.0]) == []


def test_a_change_point_never_lands_on_a_night_equal_to_the_previous_segment():
    rng = np.random.default_rng(3)
    for _ in range(300):
        levels = rng.choice([3.0, 4.0, 5.0], size=int(rng.integers(1, 5)))
        series = [float(v) for level in levels for v in [level] * int(rng.integers(1, 5))]
        found = change_points(series)
        edges = [0, *found, len(series)]
        for i, k in enumerate(found, start=1):
            assert series[k] != float(np.median(series[edges[i - 1] : k])), (series, found)
            assert edges[i + 1] - k >= 2  # a new level holds for at least two nights
    assert change_points([4.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0, 3.0, 5.0, 5.0]) == [4, 8]


def test_unchanged_noisy_series_show_no_change_point_in_at_least_95_percent():
    """1,000 random series of 4 to 60 nights of Gaussian noise (no minimum effect to hide behind)."""
    rng = np.random.default_rng(25)
    flagged = sum(bool(change_points(rng.normal(10, 1, int(rng.integers(4, 61))), min_effect=0)) for _ in range(1000))
    assert flagged <= 50, flagged


def test_a_step_of_three_noise_standard_deviations_lands_on_its_night():
    """1,000 random series of 12 to 40 nights with a step of 3σ to 6σ (and at least min_effect) at a random night
    k, four nights or more on each side: at least 95% give exactly [k] (the rest: a second change point or a
    boundary off by one night where a night's noise put it nearer the other level). The noise is Gaussian with
    σ = 1, cut at ±1.5σ so that the nights next to the step are not nearer the other level than their own (then
    no method could tell where the step is); plain Gaussian noise gives [k] in about 91% (measured: 2730/3000)."""
    rng = np.random.default_rng(26)
    found = 0
    for _ in range(1000):
        n = int(rng.integers(12, 41))
        k = int(rng.integers(4, n - 3))
        series = 100 + np.clip(rng.normal(0, 1, n), -1.5, 1.5)
        series[k:] += rng.choice([-1, 1]) * rng.uniform(3, 6)
        found += change_points(series, min_effect=0.01) == [k]
    assert found >= 950, found


# Simulated nights: a generation-bound async run (64 slots of ~60 s rollouts make ~1.07 samples/s for a trainer
# that takes 1.6/s, so it idles about a third of the time); `latency` scales the generator's rollout time.
def night(seed: int, latency: float = 60.0, repeats: int = 3) -> list[dict[str, float]]:
    out = []
    for repeat in range(repeats):
        spec = build_spec({
            "name": "n", "adapter": "sim", "warmup_steps": 1,
            "workload": {"prompts_per_step": 4, "group_size": 8, "max_staleness": 2, "steps": 30},
            "sim": {"mode": "async", "concurrency": 64, "train_step_time": 20.0, "seed": seed + repeat,
                    "latency": {"dist": "lognormal", "mean": latency, "cv": 0.5}},
        })  # fmt: skip
        out.append({k: v.value for k, v in compute_metrics(simulate_spec(spec)).items()})
    return out


WATCH = ("trainer_throughput_sps", "trainer_idle_ratio", "staleness_mean")


@pytest.fixture(scope="module")
def unchanged_nights() -> list[list[dict[str, float]]]:
    return [night(seed=100 * n) for n in range(11)]


def gate(history: list[list[dict[str, float]]], tonight: list[dict[str, float]], metric: str, nights: int = 5):
    baseline = [run[metric] for past in history[-nights:] for run in past]
    return compare_values(baseline, [run[metric] for run in tonight], metric_direction(metric))


def test_unchanged_nights_raise_no_regression(unchanged_nights):
    verdicts = [gate(unchanged_nights[:n], unchanged_nights[n], m).verdict
                for n in range(1, len(unchanged_nights)) for m in WATCH]  # fmt: skip
    # night 1 (3 repeats against 3 points) cannot be tested; nights 2..10 are gated against 6..15 points
    assert verdicts[:3] == ["insufficient_data"] * 3 and set(verdicts[3:]) == {"unchanged"}
    assert gate(unchanged_nights[:0], unchanged_nights[0], "trainer_idle_ratio").verdict == "insufficient_data"


def test_a_ten_percent_slower_generator_is_a_regression_on_throughput_and_idle(unchanged_nights):
    slower = night(seed=5000, latency=66.0)
    throughput = gate(unchanged_nights, slower, "trainer_throughput_sps")
    idle = gate(unchanged_nights, slower, "trainer_idle_ratio")
    assert throughput.verdict == "regression" and throughput.relative_change < -0.05
    assert idle.verdict == "regression" and idle.relative_change > 0.05
    assert throughput.p_value < 0.05 and idle.p_value < 0.05


def test_a_ten_percent_faster_generator_is_an_improvement(unchanged_nights):
    faster = night(seed=6000, latency=54.0)
    throughput = gate(unchanged_nights, faster, "trainer_throughput_sps")
    idle = gate(unchanged_nights, faster, "trainer_idle_ratio")
    assert throughput.verdict == "improvement" and throughput.relative_change > 0.05
    assert idle.verdict == "improvement" and idle.relative_change < 0
