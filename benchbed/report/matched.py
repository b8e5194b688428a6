"""Runs compared at matched quality: which group reaches the shared quality target sooner, and by how much, or
that a group never reached it (a faster run that never learns as far is no win)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchbed.report.run_groups import RunGroup


def shared_target(groups: Sequence[RunGroup]) -> str | None:
    """The quality target every run was judged by, when they share one (as the spec's [quality] keeps it)."""
    texts = {(r.spec.get("quality") or {}).get("target") for g in groups for r in g.records}
    return None if len(texts) != 1 or None in texts else str(texts.pop())


def _median_of(group: RunGroup, name: str) -> tuple[float | None, int]:
    """The median of a metric over the group's runs that have it, and how many have it."""
    values = [r.metrics[name].value for r in group.records if name in r.metrics]
    return (float(np.median(values)) if values else None), len(values)


def matched_quality(groups: Sequence[RunGroup]) -> list[str]:
    """One sentence per group against the group reaching the target soonest (median time_to_target_s over its
    runs): "A reaches T 1.37× sooner than B: 7.43 s against 10.2 s", or "B: T not reached in the run"."""
    target = shared_target(groups)
    if target is None or len(groups) < 2:
        return []
    times = {g.label: _median_of(g, "time_to_target_s") for g in groups}
    judged = [g for g in groups if _median_of(g, "target_reached")[1]]
    reached = [g for g in judged if times[g.label][0] is not None]
    lines = []
    if reached:
        best = min(reached, key=lambda g: times[g.label][0] or 0.0)
        fastest = times[best.label][0] or 0.0
        for group in reached:
            if group is best:
                continue
            other = times[group.label][0] or 0.0
            ratio = f"{other / fastest:.2f}× sooner than" if fastest > 0 else "sooner than"
            lines.append(f"{best.label} reaches {target} {ratio} {group.label}: {fastest:.4g} s against "
                         f"{other:.4g} s, median time to target")  # fmt: skip
    for group in judged:
        count, total = times[group.label][1], group.n
        if count == 0:
            lines.append(f"{group.label}: {target} not reached in the run ({total} run(s))")
        elif count < total:
            lines.append(f"{group.label}: {target} reached in {count} of {total} runs (the median is of those)")
    return lines
