"""Regression statistics, one implementation for `nightly`, `compare`, `history` and the reports.

`compare_values` is the gate: a two-sided rank test (`rank_test_p_value`, exact with ties) between two samples of
one metric plus a minimum relative effect on the medians, read in the direction the metric registry gives.
`compare_to_band` is the gate for a metric an entry bands: the candidates' median against the mean and spread of
the trusted reference nights. `change_points` finds level shifts in a series (one value per night) by optimal
partitioning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np

from benchbed.gate import DEFAULT_ALPHA, DEFAULT_BAND_SD, DEFAULT_MIN_EFFECT
from benchbed.metrics.registry import PRESENTATION, headline_metrics

if TYPE_CHECKING:
    from benchbed.record import RunRecord

Verdict = Literal["regression", "improvement", "unchanged", "insufficient_data"]
VERDICTS: tuple[Verdict, ...] = ("regression", "improvement", "unchanged", "insufficient_data")


def median(values: Sequence[float] | np.ndarray) -> float:
    """np.median's value (NaN if any value is NaN; the mean of the two middle values of an even count) without its
    first call's import of numpy.ma, a twentieth of a second of `benchbed history`'s start-up."""
    ordered = np.sort(np.asarray(values, dtype=float))
    n = len(ordered)
    if n == 0 or np.isnan(ordered[-1]):
        return math.nan
    middle = n // 2
    return float(ordered[middle]) if n % 2 else float((ordered[middle - 1] + ordered[middle]) / 2)


FRAMEWORK_PREFIX = "framework_"
# Watched when a suite entry names none: the registry's headline metrics that have a better direction.
DEFAULT_WATCH = headline_metrics(directed=True)


@dataclass(frozen=True)
class Comparison:
    """The gate's answer for one metric: verdict plus the figures it was decided on."""

    verdict: Verdict
    baseline_median: float | None
    candidate_median: float | None
    relative_change: float | None  # (candidate − baseline) / |baseline|; None when the baseline median is 0
    p_value: float | None
    n_baseline: int
    n_candidate: int
    reason: str  # one line saying why, for tables and JUnit messages

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class EntryVerdict:
    """A gate verdict for one metric of one series, with the changes between the baseline nights and tonight."""

    machine: str
    entry: str
    metric: str
    night: str
    comparison: Comparison
    changes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    def to_json(self) -> dict[str, object]:
        data = {"entry": self.entry, "metric": self.metric, **self.comparison.to_json()}
        data.update(machine=self.machine, night=self.night, higher_is_better=metric_direction(self.metric),
                    changes=list(self.changes))  # fmt: skip
        return data


def metric_direction(name: str) -> bool | None:
    """higher_is_better from the metric registry (a framework's own figure reads like ours); None if unknown."""
    presentation = PRESENTATION.get(name.removeprefix(FRAMEWORK_PREFIX))
    return presentation.higher_is_better if presentation else None


def default_watch(present: Iterable[str]) -> list[str]:
    """The metrics an entry that names none watches: those of DEFAULT_WATCH among `present`, in that order."""
    have = set(present)
    return [m for m in DEFAULT_WATCH if m in have]


def min_p_value(n_baseline: int, n_candidate: int) -> float:
    """The smallest two-sided p-value the exact rank test can reach with these sample sizes (no ties)."""
    if n_baseline < 1 or n_candidate < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_baseline + n_candidate, n_candidate))


EXACT_LIMIT = 100  # values in both samples together up to which the rank test's p-value is exact


def rank_test_p_value(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon-Mann-Whitney rank-sum test with average ranks for ties.

    Exact up to EXACT_LIMIT values together: the permutation distribution of the candidate's rank sum, counted by
    dynamic programming over the tie groups (the same as enumerating all C(n, m) splits), and p = the share of
    splits at least as far from the mean as the one observed. Beyond it, the normal approximation with the tie
    correction of the variance and a continuity correction of 1/2 rank.
    """
    base, cand = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    m, n_total = len(cand), len(base) + len(cand)
    if not len(base) or not m:
        return 1.0
    values, counts = np.unique(np.concatenate([base, cand]), return_counts=True)
    doubled = np.cumsum(counts) * 2 - counts + 1  # 2 × average rank of each tie group (an integer)
    observed = int(sum(doubled[np.searchsorted(values, v)] for v in cand))
    mean = m * (n_total + 1)  # 2 × the expected rank sum
    if n_total > EXACT_LIMIT:
        ties = float((counts**3 - counts).sum())
        variance = len(base) * m / 12 * ((n_total + 1) - ties / (n_total * (n_total - 1)))
        if variance <= 0:
            return 1.0
        z = max(abs(observed - mean) / 2 - 0.5, 0.0) / math.sqrt(variance)
        return min(1.0, math.erfc(z / math.sqrt(2)))
    sums = rank_sum_counts(tuple(counts.tolist()), m)
    extreme = float(sums[np.abs(np.arange(len(sums)) - mean) >= abs(observed - mean)].sum())
    return min(1.0, extreme / math.comb(n_total, m))


@lru_cache(maxsize=256)  # at most 256 rows of up to 10,001 floats
def rank_sum_counts(counts: tuple[int, ...], m: int) -> np.ndarray:
    """How many of the C(n, m) ways to pick m of n values (tie groups of these sizes, in rank order) give each doubled
    rank sum: a function of the tie structure alone, so a night of every series with the same sizes is counted once.
    Dynamic programming over the tie groups; float64 holds C(100, 50) ≈ 1e29 with 16 significant digits."""
    n_total = sum(counts)
    ways = np.zeros((m + 1, 2 * n_total * m + 1))  # ways[j, s]: j values picked with doubled rank sum s so far
    ways[0, 0] = 1.0
    doubled = np.cumsum(counts) * 2 - np.asarray(counts) + 1  # 2 × average rank of each tie group (an integer)
    for size, rank in zip(counts, doubled.tolist(), strict=True):
        if size == 1:
            ways[1:, rank:] += ways[:-1, :-rank]  # numpy buffers the overlapping operands
            continue
        step = ways.copy()
        for j in range(1, min(size, m) + 1):
            step[j:, j * rank :] += math.comb(size, j) * ways[: m + 1 - j, : ways.shape[1] - j * rank]
        ways = step
    row = ways[m].copy()  # the row alone, not the whole table behind a view
    row.flags.writeable = False  # shared by every caller through the cache
    return row


Medians = tuple[np.ndarray, np.ndarray, float | None, float | None, float | None]


def _medians(baseline: Sequence[float | None], candidate: Sequence[float | None]) -> Medians:
    """The finite values of each side, their medians (None for a side with none) and the candidate's median
    relative to the baseline's (None when either is missing or the baseline's is 0)."""
    base = np.asarray([v for v in baseline if v is not None and math.isfinite(v)], dtype=float)
    cand = np.asarray([v for v in candidate if v is not None and math.isfinite(v)], dtype=float)
    base_median = median(base) if len(base) else None
    cand_median = median(cand) if len(cand) else None
    relative = None
    if base_median is not None and cand_median is not None and base_median != 0:
        relative = (cand_median - base_median) / abs(base_median)
    return base, cand, base_median, cand_median, relative


def compare_values(
    baseline: Sequence[float],
    candidate: Sequence[float],
    higher_is_better: bool,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> Comparison:
    """Verdict for `candidate` against `baseline` (NaNs dropped).

    `insufficient_data` when the sample sizes cannot reach significance at `alpha` at all (never a silent pass);
    otherwise `regression`/`improvement` when p < alpha and the medians differ by at least `min_effect`
    relative to the baseline in the worse/better direction, else `unchanged`.
    """
    base, cand, base_median, cand_median, relative = _medians(baseline, candidate)

    def result(verdict: Verdict, p: float | None, reason: str) -> Comparison:
        return Comparison(verdict, base_median, cand_median, relative, p, len(base), len(cand), reason)

    if not len(base) or not len(cand):
        return result("insufficient_data", None, "no baseline values yet" if not len(base) else "no candidate values")
    floor = min_p_value(len(base), len(cand))
    if floor >= alpha:
        return result(
            "insufficient_data", None,
            f"{len(base)} baseline and {len(cand)} candidate values cannot reach p < {alpha:g} (best {floor:.3g})",
        )  # fmt: skip
    assert base_median is not None and cand_median is not None
    if np.ptp(np.concatenate([base, cand])) == 0:
        return result("unchanged", 1.0, "all values are equal")
    p = rank_test_p_value(base, cand)
    if p >= alpha:
        return result("unchanged", p, f"p = {p:.3g} ≥ {alpha:g}")
    effect = abs(relative) if relative is not None else math.inf
    if effect < min_effect:
        return result("unchanged", p, f"median changed {effect:.1%} < {min_effect:.0%}")
    better = (cand_median > base_median) == higher_is_better
    word = "better" if better else "worse"
    return result(
        "improvement" if better else "regression", p,
        f"median {base_median:.4g} → {cand_median:.4g} ({_percent(relative)}, {word}), p = {p:.3g}",
    )  # fmt: skip


BAND_MIN_REFERENCE = 3  # reference values a band needs: a mean and a spread from fewer say little


def compare_to_band(
    reference: Sequence[float],
    candidate: Sequence[float],
    higher_is_better: bool,
    min_width: float,
    band_sd: float = DEFAULT_BAND_SD,
) -> Comparison:
    """Verdict for `candidate` against the reference band of trusted values, as MLPerf's reference convergence
    points judge time to quality: the band is the reference mean ± max(band_sd standard deviations, min_width ×
    |mean|), and the candidates' median outside it on the worse side is a regression. One candidate value is
    enough, which is what a learning metric needs when a night affords one run."""
    ref, cand, ref_median, cand_median, relative = _medians(reference, candidate)

    def result(verdict: Verdict, reason: str) -> Comparison:
        return Comparison(verdict, ref_median, cand_median, relative, None, len(ref), len(cand), reason)

    if len(ref) < BAND_MIN_REFERENCE:
        return result("insufficient_data", f"{len(ref)} trusted reference value(s); a band needs {BAND_MIN_REFERENCE}")
    if cand_median is None:
        return result("insufficient_data", "no candidate values")
    mean = float(ref.mean())
    half = max(band_sd * float(ref.std(ddof=1)), min_width * abs(mean))
    low, high = mean - half, mean + half
    band = f"the reference band {low:.4g}..{high:.4g} (mean ± {half:.3g} of {len(ref)} trusted values)"
    if low <= cand_median <= high:
        return result("unchanged", f"median {cand_median:.4g} within {band}")
    better = (cand_median > high) == higher_is_better
    return result("improvement" if better else "regression",
                  f"median {cand_median:.4g} outside {band}, {'better' if better else 'worse'}")  # fmt: skip


def _percent(relative: float | None) -> str:
    return "from 0" if relative is None else f"{relative:+.1%}"


def change_points(values: Sequence[float], min_effect: float = DEFAULT_MIN_EFFECT, min_size: int = 2) -> list[int]:
    """Indices of the first night of each new level in `values` (one median per night, oldest first).

    Optimal partitioning on a least-squares cost with a penalty per change of σ²·(4 + 2·ln n)·(1 + 8/n): σ from
    the (lower) median absolute night-to-night difference (robust to the steps themselves), 4 + 2·ln n about the
    95% point of the best single split's gain in Gaussian noise, widened for a σ estimated from few nights, so at
    least 95% of unchanged noisy series show no change point. A new level needs `min_size` nights (the first
    segment may be shorter: nothing is known before it), so a step on the last night alone is that night's
    verdict, not yet a change point. Each boundary is then moved to where the two segments around it fit best,
    so it lands on the first night of the new level, never on an unchanged one; shifts of the segment medians
    below `min_effect` (relative) are merged away, so a very quiet series does not turn every wiggle into a change.
    """
    return many_change_points([values], [min_effect], min_size)[0]


def many_change_points(
    series: Sequence[Sequence[float]], min_effects: Sequence[float], min_size: int = 2
) -> list[list[int]]:
    """`change_points` of each series (with its own `min_effect`), the optimal partitions searched for all of
    them at once: a history of hundreds of series pays one vectorised pass over the nights, not one per series."""
    signals = [np.asarray(values, dtype=float) for values in series]
    searched = [k for k, signal in enumerate(signals) if len(signal) >= 1 + min_size]
    bounds = _optimal_partitions([signals[k] for k in searched], [_penalty(signals[k]) for k in searched], min_size)
    out: list[list[int]] = [[] for _ in signals]
    for k, found in zip(searched, bounds, strict=True):
        while True:
            kept = _settle(signals[k], found, min_effects[k], min_size)
            if kept == found:
                break
            found = kept
        out[k] = found
    return out


def _penalty(signal: np.ndarray) -> float:
    """The cost of one more change in `signal` (see `change_points`)."""
    n = len(signal)
    diffs = np.sort(np.abs(np.diff(signal)))
    sigma = 1.4826 * float(diffs[(len(diffs) - 1) // 2]) / math.sqrt(2)  # the lower median: one step is no noise
    scale = median(np.abs(signal)) or 1.0
    sigma = max(sigma, 1e-3 * scale)  # identical nights have σ = 0; keep the penalty positive
    return sigma**2 * (4 + 2 * math.log(n)) * (1 + 8 / n)


def _sse(signal: np.ndarray, start: int, end: int) -> float:
    part = signal[start:end]
    return float(((part - part.mean()) ** 2).sum()) if len(part) else 0.0


def _optimal_partitions(signals: list[np.ndarray], penalties: list[float], min_size: int) -> list[list[int]]:
    """Per signal, the segment starts (after the first) minimising Σ SSE + penalty per change; segments after the
    first have at least `min_size` points. O(n²) with cumulative sums (n is a number of nights), each end index
    computed for every signal at once: one row per signal, shorter ones padded (a row's padding is never read back,
    and each row's figures are the same operations on the same numbers as for that signal alone)."""
    if not signals:
        return []
    rows, n = len(signals), max(len(s) for s in signals)
    padded = np.zeros((rows, n))
    for k, signal in enumerate(signals):
        padded[k, : len(signal)] = signal
    zero = np.zeros((rows, 1))
    s1 = np.concatenate([zero, np.cumsum(padded, axis=1)], axis=1)
    s2 = np.concatenate([zero, np.cumsum(padded**2, axis=1)], axis=1)
    penalty = np.asarray(penalties, dtype=float)[:, None]
    best = np.full((rows, n + 1), np.inf)
    best[:, 0] = -penalty[:, 0]  # the first segment costs no change
    previous = np.zeros((rows, n + 1), dtype=int)
    lengths, every_row = np.arange(n + 1, 0, -1, dtype=float), np.arange(rows)
    cost, square = np.empty((rows, n + 1)), np.empty((rows, n + 1))  # buffers: one allocation, not one per night
    for end in range(1, n + 1):
        last = max(end - min_size, 0) + 1  # starts 0, or one leaving min_size points
        c, q = cost[:, :last], square[:, :last]
        np.subtract(s2[:, end : end + 1], s2[:, :last], out=c)
        np.subtract(s1[:, end : end + 1], s1[:, :last], out=q)
        np.square(q, out=q)
        np.divide(q, lengths[n + 1 - end : n + 1 - end + last], out=q)  # end - start for each start
        np.subtract(c, q, out=c)
        np.add(best[:, :last], c, out=c)
        np.add(c, penalty, out=c)
        chosen = np.argmin(c, axis=1)
        best[:, end] = c[every_row, chosen]
        previous[:, end] = chosen
    out = []
    for k, signal in enumerate(signals):
        starts, end = [], len(signal)
        while end > 0:
            end = int(previous[k, end])
            starts.append(end)
        out.append(sorted(starts)[1:])
    return out


def _settle(signal: np.ndarray, bounds: list[int], min_effect: float, min_size: int) -> list[int]:
    """One pass over the boundaries: each moved to its best split between its neighbours, then dropped when the
    new level is shorter than `min_size` nights or its median moved less than `min_effect` from the previous one."""
    edges = [0, *bounds, len(signal)]
    out: list[int] = []
    for k in range(1, len(edges) - 1):
        low, high = (out[-1] if out else 0), edges[k + 1]
        candidates = range(low + (min_size if low else 1), high)
        split = min(candidates, key=lambda t: (_sse(signal, low, t) + _sse(signal, t, high), t))
        before, after = median(signal[low:split]), median(signal[split:high])
        if high - split < min_size or abs(after - before) < min_effect * (abs(before) or 1.0) or after == before:
            continue
        out.append(split)
    return out


def entry_name(record: RunRecord) -> str:
    """The series a run belongs to: its suite entry, else its spec name with the matrix point."""
    if record.suite is not None:
        return record.suite.entry
    variant = record.spec.get("variant") or {}
    label = ",".join(f"{k}={v}" for k, v in variant.items())
    name = str(record.spec.get("name", record.spec_id))
    return f"{name}[{label}]" if label else name


def compare_records(
    baseline: Sequence[RunRecord],
    candidate: Sequence[RunRecord],
    metrics: Sequence[str],
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> list[EntryVerdict]:
    """The gate between two sets of runs, per metric (runs that did not succeed are left out).

    Runs are grouped by entry (`entry_name`); with one entry on each side they are compared whatever their
    names, otherwise entries are matched by name and unmatched ones are left out."""

    def groups(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
        out: dict[str, list[RunRecord]] = {}
        for record in records:
            if record.status == "succeeded":
                out.setdefault(entry_name(record), []).append(record)
        return out

    base, cand = groups(baseline), groups(candidate)
    if len(base) == 1 and len(cand) == 1:
        (base_name, base_runs), (cand_name, cand_runs) = next(iter(base.items())), next(iter(cand.items()))
        label = cand_name if base_name == cand_name else f"{base_name} vs {cand_name}"
        pairs = [(label, base_runs, cand_runs)]
    else:
        pairs = [(name, base[name], cand[name]) for name in cand if name in base]
    verdicts = []
    for label, base_runs, cand_runs in pairs:
        machine = ",".join(dict.fromkeys(r.machine.name for r in cand_runs))
        for metric in metrics:
            direction = metric_direction(metric)
            if direction is None:
                continue
            comparison = compare_values(_values(base_runs, metric), _values(cand_runs, metric), direction,
                                        alpha=alpha, min_effect=min_effect)  # fmt: skip
            verdicts.append(EntryVerdict(machine, label, metric, "", comparison, _spec_changes(base_runs, cand_runs)))
    return verdicts


def _values(records: Sequence[RunRecord], metric: str) -> list[float]:
    return [r.metrics[metric].value for r in records if metric in r.metrics]


def _spec_changes(baseline: Sequence[RunRecord], candidate: Sequence[RunRecord]) -> tuple[str, ...]:
    def ids(records: Sequence[RunRecord]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.spec_id for r in records))

    def versions(records: Sequence[RunRecord]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(framework_label(r.adapter.framework, r.adapter.version) for r in records))

    return describe_changes(ids(baseline), ids(candidate), versions(baseline), versions(candidate))


def framework_label(framework: str, version: str) -> str:
    return f"{framework} {version}".strip()


def describe_changes(
    specs_before: Sequence[str],
    specs_after: Sequence[str],
    versions_before: Sequence[str],
    versions_after: Sequence[str],
) -> tuple[str, ...]:
    """What differs between two sets of runs of one series: spec ids, framework versions ('a → b' lines)."""
    out = []
    for what, before, after in (("spec", specs_before, specs_after), ("framework", versions_before, versions_after)):
        if set(before) != set(after):
            out.append(f"{what} {', '.join(before)} → {', '.join(after)}")
    return tuple(out)
