"""Target ÷ baseline ratios of one benchmark session: recorded by the benchmarks, printed by conftest."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class Ratio:
    name: str
    target_s: float
    baseline: str
    baseline_s: float
    limit: float | None  # None: reported, not judged

    @property
    def value(self) -> float:
        return self.target_s / self.baseline_s

    @property
    def verdict(self) -> str:
        if self.limit is None:
            return "reported"
        return "ok" if self.value <= self.limit else "MISSED"


RATIOS: list[Ratio] = []

# Python that prints the process's own peak RSS in KiB. Not getrusage(RUSAGE_SELF).ru_maxrss: Linux carries the
# high-water mark over fork and exec, so a child of a large pytest process would report its parent's RSS.
PRINT_PEAK_RSS_KIB = "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))"


def median_of(benchmark) -> float:  # type: ignore[no-untyped-def]
    return float(benchmark.stats.stats.median)


def ratio(name: str, target_s: float, baseline: str, baseline_s: float, limit: float | None) -> Ratio:
    """Record target ÷ baseline for the summary and fail when it is over `limit`."""
    r = Ratio(name, target_s, baseline, baseline_s, limit)
    RATIOS.append(r)
    if limit is not None:
        assert r.value <= limit, f"{name}: {r.value:.2f}x {baseline}, target at most {limit}x"
    return r


def baseline_median(medians: dict[str, float], name: str) -> float:
    """A baseline measured earlier in this session; its benchmark runs first in the same module."""
    if name not in medians:
        pytest.fail(f"baseline {name!r} was not measured in this run: run the whole module, not one test of it")
    return medians[name]
