"""Suite history from the results store: points per (machine, entry, metric), nights, change points, verdicts.

A series is keyed by (machine, suite entry name), not spec_id: an edited spec or a new framework version
continues it and is marked on it. Points come from succeeded runs that carry suite information.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
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
    errors. Text columns come as pandas Categoricals: a run's text is held once, not once per metric (600,000 points
    of 100,000 runs), and grouping them costs no string hashing."""
    columns = [*POINT_COLUMNS[:14], "status", "metrics", "error", "path"]
    runs = Catalog(store.root).table(machine=machine, columns=columns)  # a machine's series: only its index is read
    errors = runs.column("error").drop_null().to_pylist()
    keep = pc.and_(pc.is_valid(runs.column("suite")), pc.equal(runs.column("status"), "succeeded"))
    for column, value in {"machine": machine, "suite": suite, "entry": entry}.items():
        if value is not None:
            keep = pc.and_(keep, pc.equal(runs.column(column), value))
    order = pc.sort_indices(runs, [(c, "ascending") for c in ("started_at", "repeat", "path")]).to_numpy()
    order = order[pc.fill_null(keep, False).to_numpy()[order]]  # the kept runs in time order, by index: no copy
    metrics = runs.column("metrics").combine_chunks()
    counts = pc.fill_null(pc.list_value_length(metrics), 0).to_numpy()[order]  # each kept run's metrics, in order
    run_of = np.repeat(order, counts)  # each point's run
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)  # 0, 1, ... within its run
    flat = metrics.values.take(np.repeat(metrics.offsets.to_numpy()[order], counts) + within)  # as recorded
    names = pc.struct_field(flat, "name")
    if metric is not None:
        chosen = pc.equal(names, metric)
        run_of, flat, names = run_of[chosen.to_numpy(zero_copy_only=False)], flat.filter(chosen), names.filter(chosen)
    at_runs = {name: runs.column(name) for name in POINT_COLUMNS[:14]}
    at_runs["path"] = pc.binary_join_element_wise(f"{store.root}/", runs.column("path"), "")
    arrays = {name: (pc.dictionary_encode(c) if pa.types.is_string(c.type) else c).take(run_of)
              for name, c in at_runs.items()}  # fmt: skip
    arrays.update(metric=pc.dictionary_encode(names), value=pc.struct_field(flat, "value"),
                  unit=pc.dictionary_encode(pc.struct_field(flat, "unit")))  # fmt: skip
    frame = pa.table({name: arrays[name] for name in POINT_COLUMNS}).to_pandas()  # the runs' order, metrics as recorded
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


class _Points:
    """A points frame read by position: each column factorized once (codes into its distinct values), so a series
    or a night is a list of row positions and no pandas operation runs per series or per night (a fleet's year is
    some 70,000 nights; a pandas group per night took 15 minutes for them)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self._columns: dict[str, tuple[np.ndarray, list[Any]]] = {}
        self._values = frame["value"].to_numpy(dtype=float, na_value=np.nan)

    def _factorized(self, name: str) -> tuple[np.ndarray, list[Any]]:
        if name not in self._columns:
            codes, uniques = pd.factorize(self.frame[name], use_na_sentinel=False)
            self._columns[name] = (np.asarray(codes), [v if isinstance(v, str) else None for v in uniques])
        return self._columns[name]

    def get(self, name: str, positions: np.ndarray) -> list[Any]:
        """The column's values at `positions` (missing ones as None)."""
        codes, uniques = self._factorized(name)
        return [uniques[c] for c in codes[positions].tolist()]

    def where(self, positions: np.ndarray, name: str, value: str) -> np.ndarray:
        """The positions among `positions` whose column `name` holds `value`."""
        codes, uniques = self._factorized(name)
        if value not in uniques:
            return positions[:0]
        return positions[codes[positions] == uniques.index(value)]

    def groups(self) -> list[tuple[str, str, np.ndarray]]:
        """(machine, entry, row positions) of every series group, sorted by machine then entry."""
        indices = self.frame.groupby(["machine", "entry"], sort=False, observed=True).indices
        return sorted((str(machine), str(entry), rows) for (machine, entry), rows in indices.items())

    def latest(self, positions: np.ndarray) -> np.ndarray:
        """The positions of the latest run's points (the greatest started_at)."""
        started = self.get("started_at", positions)
        last = max(started)
        return positions[[s == last for s in started]]

    def nights(self, positions: np.ndarray) -> list[NightValues]:
        """The points at `positions` (one series) grouped by night, in time order."""
        rows_of: dict[str, list[int]] = {}
        for i, night in enumerate(self.get("night", positions)):
            rows_of.setdefault(str(night), []).append(i)
        started, run_ids = self.get("started_at", positions), self.get("run_id", positions)
        labels = {  # what ran, per point: a column with one value over the whole series is that value every night
            "spec": self.get("spec_id", positions),
            "framework": list(map(framework_label, self.get("framework", positions),
                                  self.get("framework_version", positions))),
            "commit": [(c or "")[:12] for c in self.get("benchbed_commit", positions)],
        }  # fmt: skip
        constant = {k: (v[0],) for k, v in labels.items() if v and v.count(v[0]) == len(v)}

        def ran(kind: str, rows: list[int]) -> tuple[str, ...]:
            return constant.get(kind) or tuple(dict.fromkeys(labels[kind][i] for i in rows))

        value = self._values[positions].tolist()
        out = []
        for night, rows in rows_of.items():
            values = tuple(value[i] for i in rows)
            present = [v for v in values if v == v]  # NaN is no value (a median skips it)
            out.append(NightValues(
                night=night, started_at=str(min(started[i] for i in rows)), values=values,
                median=float(statistics.median(present)) if present else float("nan"), spec_ids=ran("spec", rows),
                framework_versions=ran("framework", rows), benchbed_commits=ran("commit", rows),
                run_ids=tuple(run_ids[i] for i in rows),
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


def _watched(points: _Points, rows: np.ndarray, latest: np.ndarray, unknown: list[str]) -> list[str]:
    """The metrics a series' latest run watches (its suite entry's list, else the default ones it reports).
    Names this benchbed does not know (a record from another version) are left out and added to `unknown`."""
    listed = [m for m in (points.get("watch", latest[:1])[0] or "").split(",") if m]
    known = [m for m in listed if is_known_metric(m)]
    unknown += [m for m in listed if not is_known_metric(m)]
    return known or default_watch(set(points.get("metric", rows)))


def build_series(points: pd.DataFrame, metrics: list[str] | None = None, nights: int | None = None,
                 warnings: list[str] | None = None) -> list[Series]:  # fmt: skip
    """Every (machine, entry) × watched metric (or `metrics`) in `points` as a Series with its last verdict,
    judged with the gate its latest run recorded (with `nights` previous nights when given). A watched metric
    this benchbed does not know is left out with a line in `warnings`; the series' other metrics stay."""
    table = _Points(points)
    out = []
    for machine, entry, rows in table.groups():
        latest = table.latest(rows)
        entry_gate = Gate.model_validate_json(table.get("gate", latest[-1:])[0])  # the gate its latest run recorded
        if nights is not None:
            entry_gate = entry_gate.model_copy(update={"nights": nights})
        unknown: list[str] = []
        names = metrics or _watched(table, rows, latest, unknown)
        if unknown and warnings is not None:
            warnings.append(
                f"{entry} on {machine}: its latest run watches {', '.join(unknown)}, unknown to this benchbed "
                f"(written by another version?); showing {', '.join(names) or 'no metric'}"
            )
        for metric in names:
            metric_rows = table.where(rows, "metric", metric)
            if not len(metric_rows):
                continue
            ns = table.nights(metric_rows)
            series = Series(
                machine=machine, suite=str(table.get("suite", metric_rows[-1:])[0]), entry=entry, metric=metric,
                unit=str(table.get("unit", metric_rows[-1:])[0]), nights=ns,
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
    table = _Points(points[(points["machine"] == machine) & (points["entry"] == entry)])
    rows = np.arange(len(table.frame))
    verdicts = []
    for metric in metrics:
        nights = table.nights(table.where(rows, "metric", metric))
        index = next((i for i, n in enumerate(nights) if n.night == night), None)
        if index is None:
            comparison = compare_values([v for n in nights[-gate.nights :] for v in n.values], [], True)
            verdicts.append(EntryVerdict(machine, entry, metric, night, comparison))
            continue
        comparison, changes = gate_night(nights, index, metric, gate)
        verdicts.append(EntryVerdict(machine, entry, metric, night, comparison, changes))
    return verdicts
