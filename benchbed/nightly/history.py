"""Suite history from the results store: points per (machine, entry, metric), nights, change points, verdicts.

A series is keyed by (machine, suite entry name), not spec_id: an edited spec or a new framework version
continues it and is marked on it. Points come from succeeded runs that carry suite information.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from benchbed.catalog import Catalog
from benchbed.metrics import METRICS
from benchbed.nightly.stats import (
    Comparison,
    EntryVerdict,
    change_points,
    compare_values,
    describe_changes,
    framework_label,
    metric_direction,
)
from benchbed.nightly.suite import default_watch
from benchbed.record import Gate
from benchbed.store import Store

POINT_COLUMNS = (
    "machine", "suite", "entry", "night", "run_id", "started_at", "repeat", "spec_id", "adapter", "framework",
    "framework_version", "benchbed_commit", "watch", "gate", "metric", "value", "unit", "path",
)  # fmt: skip


def load_points(
    store: Store,
    machine: str | None = None,
    suite: str | None = None,
    entry: str | None = None,
    metric: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (suite run, metric) from the store's catalog, filtered, ordered by time; plus unreadable-record
    errors."""
    runs = Catalog(store.root).table(machine=machine)  # a machine's series: only its own index is read
    errors = [e for e in runs.column("error").to_pylist() if e is not None]
    keep = pc.and_(pc.is_valid(runs.column("suite")), pc.equal(runs.column("status"), "succeeded"))
    for column, value in {"machine": machine, "suite": suite, "entry": entry}.items():
        if value is not None:
            keep = pc.and_(keep, pc.equal(runs.column(column), value))
    runs = runs.filter(keep).sort_by([(c, "ascending") for c in ("started_at", "repeat", "path")])  # runs, not points
    metrics = runs.column("metrics")
    parents = pc.list_parent_indices(metrics)
    points = runs.select(list(POINT_COLUMNS[:14])).take(parents)
    flat = pc.list_flatten(metrics)
    for name in ("metric", "value", "unit"):
        points = points.append_column(name, pc.struct_field(flat, "name" if name == "metric" else name))
    absolute = pc.binary_join_element_wise(f"{store.root}/", runs.column("path").take(parents), "")
    points = points.append_column("path", absolute)
    if metric is not None:
        points = points.filter(pc.equal(points.column("metric"), metric))
    frame = points.to_pandas()  # in the runs' order (each run's metrics as recorded)
    return frame, errors


@dataclass(frozen=True)
class NightValues:
    """One night of a series: its repeats' values and what ran."""

    night: str
    started_at: str
    values: tuple[float, ...]
    median: float
    spec_ids: tuple[str, ...]
    framework_versions: tuple[str, ...]
    benchbed_commits: tuple[str, ...]
    run_ids: tuple[str, ...]


@dataclass
class Series:
    """A metric over the nights of one (machine, entry): change points and marked changes by night index."""

    machine: str
    suite: str
    entry: str
    metric: str
    unit: str
    nights: list[NightValues]
    change_points: list[int] = field(default_factory=list)
    marked: dict[int, str] = field(default_factory=dict)  # night index -> what changed from the night before
    verdict: EntryVerdict | None = None  # the last night against the nights before it

    def change_point_nights(self) -> list[str]:
        """The first night of each new level, oldest first: what every page, summary and JSON document shows."""
        return [self.nights[i].night for i in self.change_points]

    def levels(self) -> list[tuple[str, float, float]]:
        """(first night of the new level, median of the level before, median of the new level) per change point."""
        edges = [0, *self.change_points, len(self.nights)]
        spans = zip(edges[:-1], edges[1:], strict=True)
        medians = [float(np.median([n.median for n in self.nights[a:b]])) for a, b in spans]
        return [(self.nights[i].night, medians[k], medians[k + 1]) for k, i in enumerate(self.change_points)]

    def to_json(self) -> dict[str, object]:
        return {
            "machine": self.machine, "suite": self.suite, "entry": self.entry, "metric": self.metric,
            "unit": self.unit, "higher_is_better": metric_direction(self.metric),
            "change_points": self.change_point_nights(),
            "levels": [{"from_night": night, "median_before": before, "median_after": after}
                       for night, before, after in self.levels()],
            "marked_changes": [{"night": self.nights[i].night, "change": text} for i, text in self.marked.items()],
            "last_verdict": self.verdict.to_json() if self.verdict else None,
            "nights": [
                {"night": n.night, "started_at": n.started_at, "median": n.median, "values": list(n.values),
                 "spec_ids": list(n.spec_ids), "framework_versions": list(n.framework_versions),
                 "benchbed_commits": list(n.benchbed_commits), "run_ids": list(n.run_ids)}
                for n in self.nights
            ],
        }  # fmt: skip


def _nights(points: pd.DataFrame) -> list[NightValues]:
    """Group one series' points by night, in time order."""
    out = []
    for night, rows in points.groupby("night", sort=False):
        out.append(NightValues(
            night=str(night), started_at=str(rows["started_at"].min()), values=tuple(rows["value"].astype(float)),
            median=float(rows["value"].median()), spec_ids=tuple(dict.fromkeys(rows["spec_id"])),
            framework_versions=tuple(dict.fromkeys(map(framework_label, rows["framework"],
                                                       rows["framework_version"]))),
            benchbed_commits=tuple(dict.fromkeys(c[:12] for c in rows["benchbed_commit"])),
            run_ids=tuple(rows["run_id"]),
        ))  # fmt: skip
    return sorted(out, key=lambda n: n.started_at)


def _changes(before: NightValues, after: NightValues) -> str:
    """What differs between two nights' runs (spec, framework version), '' when nothing."""
    return "; ".join(describe_changes(before.spec_ids, after.spec_ids, before.framework_versions,
                                      after.framework_versions))  # fmt: skip


def gate_night(nights: list[NightValues], index: int, metric: str, gate: Gate) -> tuple[Comparison, tuple[str, ...]]:
    """The night at `index` against the points of up to `gate.nights` nights before it."""
    baseline_nights = nights[max(0, index - gate.nights) : index]
    baseline = [v for n in baseline_nights for v in n.values]
    direction = metric_direction(metric)
    comparison = compare_values(baseline, nights[index].values, True if direction is None else direction,
                                alpha=gate.alpha, min_effect=gate.min_effect)  # fmt: skip
    sequence = [*baseline_nights, nights[index]]
    changes = [_changes(a, b) for a, b in zip(sequence[:-1], sequence[1:], strict=True)]
    return comparison, tuple(c for c in changes if c)


def is_known_metric(name: str) -> bool:
    """A metric this benchbed computes (a framework's own `framework_*` figures included)."""
    return name.removeprefix("framework_") in METRICS


def watched(points: pd.DataFrame, unknown: list[str] | None = None) -> list[str]:
    """The metrics a series' latest run watches (its suite entry's list, else the default ones it reports).
    Names this benchbed does not know (a record from another version) are left out and added to `unknown`."""
    latest = points[points["started_at"] == points["started_at"].max()]
    listed = [m for m in str(latest["watch"].iloc[0]).split(",") if m] if len(latest) else []
    known = [m for m in listed if is_known_metric(m)]
    if unknown is not None:
        unknown += [m for m in listed if not is_known_metric(m)]
    present = set(points["metric"])
    return known or default_watch(present)


def recorded_gate(points: pd.DataFrame) -> Gate:
    """The gate a series' latest run was judged with (its suite's [gate] then)."""
    return Gate.model_validate_json(points.sort_values("started_at")["gate"].iloc[-1])


def build_series(points: pd.DataFrame, metrics: list[str] | None = None, nights: int | None = None,
                 warnings: list[str] | None = None) -> list[Series]:  # fmt: skip
    """Every (machine, entry) × watched metric (or `metrics`) in `points` as a Series with its last verdict,
    judged with the gate its latest run recorded (with `nights` previous nights when given). A watched metric
    this benchbed does not know is left out with a line in `warnings`; the series' other metrics stay."""
    out = []
    for (machine, entry), rows in points.groupby(["machine", "entry"], sort=True):
        entry_gate = recorded_gate(rows)
        if nights is not None:
            entry_gate = entry_gate.model_copy(update={"nights": nights})
        unknown: list[str] = []
        names = metrics or watched(rows, unknown)
        if unknown and warnings is not None:
            warnings.append(
                f"{entry} on {machine}: its latest run watches {', '.join(unknown)}, unknown to this benchbed "
                f"(written by another version?); showing {', '.join(names) or 'no metric'}"
            )
        for metric in names:
            metric_rows = rows[rows["metric"] == metric]
            if metric_rows.empty:
                continue
            ns = _nights(metric_rows)
            series = Series(
                machine=str(machine), suite=str(metric_rows["suite"].iloc[-1]), entry=str(entry), metric=metric,
                unit=str(metric_rows["unit"].iloc[-1]), nights=ns,
                change_points=change_points([n.median for n in ns], min_effect=entry_gate.min_effect),
                marked={i: text for i in range(1, len(ns)) if (text := _changes(ns[i - 1], ns[i]))},
            )  # fmt: skip
            if metric_direction(metric) is not None:
                comparison, changes = gate_night(ns, len(ns) - 1, metric, entry_gate)
                series.verdict = EntryVerdict(series.machine, series.entry, metric, ns[-1].night, comparison,
                                              changes)  # fmt: skip
            out.append(series)
    return out


def night_verdicts(
    points: pd.DataFrame, machine: str, entry: str, night: str, metrics: list[str], gate: Gate
) -> list[EntryVerdict]:
    """Tonight's gate for one entry: each metric's night against the nights before it (absent: no data)."""
    rows = points[(points["machine"] == machine) & (points["entry"] == entry)]
    verdicts = []
    for metric in metrics:
        nights = _nights(rows[rows["metric"] == metric])
        index = next((i for i, n in enumerate(nights) if n.night == night), None)
        if index is None:
            comparison = compare_values([v for n in nights[-gate.nights :] for v in n.values], [], True)
            verdicts.append(EntryVerdict(machine, entry, metric, night, comparison))
            continue
        comparison, changes = gate_night(nights, index, metric, gate)
        verdicts.append(EntryVerdict(machine, entry, metric, night, comparison, changes))
    return verdicts
