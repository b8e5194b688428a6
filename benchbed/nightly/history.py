"""Suite history from the results store: points per (machine, entry, metric), nights, change points, verdicts.

A series is keyed by (machine, suite entry name), not spec_id: an edited spec or a new framework version
continues it and is marked on it. Points come from succeeded runs that carry suite information.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchbed.catalog import Catalog
from benchbed.gate import GateSettings
from benchbed.metrics.registry import PRESENTATION
from benchbed.nightly.stats import (
    Comparison,
    EntryVerdict,
    compare_to_band,
    compare_values,
    default_watch,
    describe_changes,
    framework_label,
    many_change_points,
    median,
    metric_direction,
)
from benchbed.store import Store

if TYPE_CHECKING:
    import pandas as pd

    from benchbed.record import Gate

POINT_COLUMNS = (
    "machine", "suite", "entry", "night", "run_id", "started_at", "repeat", "spec_id", "adapter", "framework",
    "framework_version", "benchbed_commit", "watch", "gate", "metric", "value", "unit", "path",
)  # fmt: skip


@dataclass
class SuiteRuns:
    """A store's succeeded suite runs (filtered) in time order, as the catalog holds them, with their metrics
    flattened into points: each point's run (a row of `runs`) and its place among the metrics' entries. Read from
    Arrow buffers as numpy arrays (pyarrow's own conversions import pandas, a third of a second)."""

    root: Path
    runs: pa.Table  # every run the catalog read, one chunk per column, text as dictionary arrays
    run_of: np.ndarray  # each point's row in `runs`, points in the runs' time order, metrics as recorded
    entry_of: np.ndarray  # each point's row in `metrics`
    metrics: pa.StructArray  # (name, value, unit) of every run's metrics
    errors: list[str]  # the unreadable records the catalog names

    def points(self, columns: tuple[str, ...] = POINT_COLUMNS) -> pa.Table:
        """One row per point with `columns` (text as dictionary arrays: a run's text is held once, not once per
        metric; `path`: the run directory's full path)."""
        run_of, entry_of = _arrow(self.run_of), _arrow(self.entry_of)
        out = {}
        for name in columns:
            if name in ("metric", "value", "unit"):
                field = pc.struct_field(self.metrics, {"metric": "name"}.get(name, name))
                out[name] = field.take(entry_of)
                continue
            column = self.runs.column(name).chunk(0)
            if name == "path":  # the store's root joined to each distinct relative path
                full = pc.binary_join_element_wise(f"{self.root}/", column.dictionary, "")
                column = pa.DictionaryArray.from_arrays(column.indices, full)
            out[name] = column.take(run_of)
        return pa.table(out)


def suite_runs(
    store: Store,
    machine: str | None = None,
    suite: str | None = None,
    entry: str | None = None,
    metric: str | None = None,
) -> SuiteRuns:
    """The succeeded suite runs of `store`'s catalog (of one machine, suite, entry, metric when given), ordered by
    started_at, repeat, path."""
    wanted = dict.fromkeys([*(c for c in POINT_COLUMNS if c not in ("metric", "value", "unit")), "status", "metrics",
                            "error"])  # fmt: skip
    runs = Catalog(store.root).table(machine=machine, columns=list(wanted), dictionaries=True).combine_chunks()
    text = {name: runs.column(name).chunk(0) for name in ("suite", "status", "machine", "entry")}
    keep = _codes(text["suite"]) != len(text["suite"].dictionary)
    for name, value in {"status": "succeeded", "machine": machine, "suite": suite, "entry": entry}.items():
        if value is not None:
            keep &= _matches(text[name], value)
    repeat = _numbers(runs.column("repeat").chunk(0), np.iinfo(np.int64).max)  # missing (none expected): last
    started, path = (_text_ranks(runs.column(c).chunk(0)) for c in ("started_at", "path"))
    order = np.lexsort((path, repeat, started))  # time order: started_at, repeat, then path
    order = order[keep[order]]  # the kept runs, by index
    metrics = runs.column("metrics").chunk(0)
    offsets = _numbers(metrics.offsets, 0)
    counts = np.where(_numbers(pc.is_valid(metrics).cast(pa.int8()), 0) == 1, np.diff(offsets), 0)[order]
    run_of = np.repeat(order, counts)  # each point's run
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)  # 0, 1, ... within its run
    entry_of = np.repeat(offsets[:-1][order], counts) + within
    flat = metrics.values
    if metric is not None:
        chosen = _matches(pc.struct_field(flat, "name"), metric)[entry_of]
        run_of, entry_of = run_of[chosen], entry_of[chosen]
    errors = runs.column("error").drop_null().to_pylist()
    return SuiteRuns(store.root, runs, run_of, entry_of, flat, errors)


_NUMPY_TYPES = {pa.int8(): np.int8, pa.int32(): np.int32, pa.int64(): np.int64, pa.float64(): np.float64}


def _arrow(values: np.ndarray) -> pa.Array:
    """A numpy array of integers as an Arrow array, sharing its memory (no pandas check, unlike pa.array)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _numbers(array: pa.Array, missing: float) -> np.ndarray:
    """A numeric Arrow array as numpy, missing values as `missing`, read through DLPack (Array.to_numpy initialises
    pandas, a third of a second, when it is installed)."""
    if array.null_count:
        fill = np.full(len(array), missing, dtype=_NUMPY_TYPES[array.type])
        array = pc.coalesce(array, pa.Array.from_buffers(array.type, len(array), [None, pa.py_buffer(fill)]))
    return np.from_dlpack(array)


def _codes(column: pa.DictionaryArray) -> np.ndarray:
    """Each row's index into the column's dictionary; a missing value: the dictionary's length."""
    return _numbers(column.indices, len(column.dictionary)).astype(np.int64)


def _matches(column: pa.DictionaryArray, value: str) -> np.ndarray:
    """Which rows of a dictionary column hold `value`."""
    found = [i for i, text in enumerate(column.dictionary.to_pylist()) if text == value]
    return np.isin(_codes(column), found)


def _text_ranks(column: pa.DictionaryArray) -> np.ndarray:
    """Each row's place in the sorted distinct values of a dictionary column, missing values last (as Arrow and
    pandas sort them)."""
    ranks = np.empty(len(column.dictionary) + 1, dtype=np.int64)
    ranks[_numbers(pc.sort_indices(column.dictionary), 0)] = np.arange(len(column.dictionary))
    ranks[-1] = len(column.dictionary)
    return ranks[_codes(column)]


def load_points(
    store: Store,
    machine: str | None = None,
    suite: str | None = None,
    entry: str | None = None,
    metric: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (suite run, metric) of `suite_runs`, as a pandas frame (text columns as Categoricals, grouped
    with no string hashing); plus unreadable-record errors."""
    runs = suite_runs(store, machine, suite, entry, metric)
    return runs.points().to_pandas(), runs.errors


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
    nights: Nights
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
        medians = [median(self.nights.medians[a:b].tolist()) for a, b in spans]
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
            "nights": self.nights.to_json(),
        }  # fmt: skip


@dataclass(frozen=True)
class _RowCodes:
    """A store column's codes at each point, read through the point's run (or metric entry) only at the positions
    asked for: most columns are read at a few positions, so no array of a million points is built for them."""

    codes: np.ndarray  # per run (or metric entry)
    rows: np.ndarray  # each point's run (or metric entry)

    def __getitem__(self, positions: np.ndarray | slice) -> np.ndarray:
        return self.codes[self.rows[positions]]


class _Points:
    """Points (a pandas frame, an Arrow table, or a store's SuiteRuns) read by position:
    each column as codes into its distinct values, so a series or a night is a range of row positions and no
    operation runs per series or per night (a fleet's year is some 70,000 nights; a pandas group per night took
    15 minutes for them)."""

    def __init__(self, points: pd.DataFrame | pa.Table | SuiteRuns) -> None:
        self.points = points
        self._columns: dict[str, tuple[np.ndarray | _RowCodes, list[Any]]] = {}
        self._ranked: dict[str, tuple[np.ndarray | _RowCodes, list[Any]]] = {}
        if isinstance(points, SuiteRuns):
            self._values = _numbers(pc.struct_field(points.metrics, "value"), np.nan)[points.entry_of]
        elif isinstance(points, pa.Table):
            self._values = _numbers(points.column("value").combine_chunks().cast(pa.float64()), np.nan)
        else:
            self._values = points["value"].to_numpy(dtype=float, na_value=np.nan)

    def _factorized(self, name: str) -> tuple[np.ndarray | _RowCodes, list[Any]]:
        """The column as (codes, distinct values); a missing value is None, with a code of its own."""
        if name not in self._columns:
            if isinstance(self.points, SuiteRuns):
                field = {"metric": "name", "unit": "unit"}.get(name)
                column = (
                    pc.struct_field(self.points.metrics, field) if field else self.points.runs.column(name).chunk(0)
                )
                rows = self.points.entry_of if field else self.points.run_of
                self._columns[name] = (_RowCodes(_codes(column), rows), [*column.dictionary.to_pylist(), None])
            elif isinstance(self.points, pa.Table):
                column = self.points.column(name).combine_chunks()
                if not pa.types.is_dictionary(column.type):
                    column = pc.dictionary_encode(column)
                self._columns[name] = (_codes(column), [*column.dictionary.to_pylist(), None])
            else:
                import pandas as pd

                codes, uniques = pd.factorize(self.points[name], use_na_sentinel=False)
                self._columns[name] = (np.asarray(codes), [v if isinstance(v, str) else None for v in uniques])
        return self._columns[name]

    def labels(self, rows: np.ndarray, label: Callable[..., str | None], *columns: str) -> tuple[np.ndarray, list[Any]]:
        """Codes of `label(value, ...)` of `columns` at `rows`, and the labels: equal labels share a code."""
        factorized = [self._factorized(c) for c in columns]
        combined, size = np.zeros(len(rows), dtype=np.int64), 1
        for codes, uniques in factorized:
            combined, size = combined * len(uniques) + codes[rows], size * len(uniques)
        present, inverse = _distinct(combined, size)
        of_label: dict[str | None, int] = {}
        recoded = []
        for value in present.tolist():
            parts = []
            for _, uniques in reversed(factorized):
                value, code = divmod(value, len(uniques))
                parts.append(uniques[code])
            recoded.append(of_label.setdefault(label(*reversed(parts)), len(of_label)))
        return np.asarray(recoded, dtype=np.int64)[inverse], list(of_label)

    def _ranks(self, name: str) -> tuple[np.ndarray | _RowCodes, list[Any]]:
        """Each point's place in the sorted distinct values of a text column (a missing value: -1 and None), and
        those values in order."""
        if name not in self._ranked:
            codes, uniques = self._factorized(name)
            text = np.array([u if u is not None else "" for u in uniques], dtype=str)
            order = np.argsort(text, kind="stable")
            ranks = np.empty(len(uniques), dtype=np.int64)
            ranks[order] = np.arange(len(uniques))
            ranks[[i for i, u in enumerate(uniques) if u is None]] = -1
            at_points = _RowCodes(ranks[codes.codes], codes.rows) if isinstance(codes, _RowCodes) else ranks[codes]
            self._ranked[name] = (at_points, [uniques[i] for i in order.tolist()])
        return self._ranked[name]

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
        """(machine, entry, row positions) of every series group, sorted by machine then entry (a point without
        either belongs to none)."""
        (machines, machine_names), (entries, entry_names) = self._factorized("machine"), self._factorized("entry")
        every = slice(None)
        distinct, inverse = _distinct(machines[every] * len(entry_names) + entries[every],
                                      len(machine_names) * len(entry_names))  # fmt: skip
        if not len(distinct):
            return []
        counts = np.bincount(inverse, minlength=len(distinct))
        if len(distinct) <= np.iinfo(np.int16).max:  # numpy sorts 16-bit keys stably by radix: 5x faster
            inverse = inverse.astype(np.int16)
        rows = np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])
        out = []
        for key, positions in zip(distinct.tolist(), rows, strict=True):
            machine, entry = machine_names[key // len(entry_names)], entry_names[key % len(entry_names)]
            if machine is not None and entry is not None:
                out.append((str(machine), str(entry), positions))
        return sorted(out, key=lambda group: group[:2])

    def latest(self, positions: np.ndarray) -> np.ndarray:
        """The positions of the latest run's points (the greatest started_at)."""
        started = self._ranks("started_at")[0][positions]
        return positions[started == started.max()]

    def nights(self, series: list[np.ndarray]) -> list[Nights]:
        """Each series' points (row positions, in order) grouped by night, nights in time order: the first
        started_at of each night, then first appearance; a night's points in row order."""
        sizes = [len(rows) for rows in series]
        rows = np.concatenate(series) if series else np.zeros(0, dtype=np.int64)
        of_series = np.repeat(np.arange(len(series)), sizes)
        night_codes, night_names = self._factorized("night")
        ranks, in_order = self._ranks("started_at")
        keys, pair = _distinct(of_series * len(night_names) + night_codes[rows], len(series) * len(night_names))
        first = np.full(len(keys), len(rows))
        np.minimum.at(first, pair, np.arange(len(rows)))  # where each (series, night) first appears
        earliest = np.full(len(keys), len(in_order))
        np.minimum.at(earliest, pair, ranks[rows])  # and its first started_at
        order = np.lexsort((first, earliest, keys // max(len(night_names), 1)))  # the nights, series by series
        place = np.empty_like(order)
        place[order] = np.arange(len(order))
        by_night = np.argsort(place[pair], kind="stable")
        started_at = [*in_order, None]  # by rank; -1 (missing): None
        table = _NightTable(
            self, rows[by_night], started_at, earliest[order], np.bincount(pair, minlength=len(keys))[order]
        )
        per_series = np.bincount(keys[order] // max(len(night_names), 1), minlength=len(series))
        return [Nights(table, int(a), int(n)) for a, n in zip(np.cumsum(per_series) - per_series, per_series,
                                                                      strict=True)]  # fmt: skip


class _NightTable:
    """Every night of some series, as arrays over their points in night order (see `_Points.nights`)."""

    def __init__(self, points: _Points, rows: np.ndarray, started_at: list[Any], earliest: np.ndarray,
                 sizes: np.ndarray) -> None:  # fmt: skip
        self.points, self.rows, self.sizes = points, rows, sizes
        self.started_at, self.earliest = started_at, earliest  # each night's first started_at, by rank
        self.starts = np.cumsum(sizes) - sizes
        self.values = points._values[rows]
        self.night_codes, self.night_names = points._factorized("night")
        self.medians = self._medians()
        self.labels = {  # what ran, at each point of `rows`
            "spec": points.labels(rows, lambda spec: spec, "spec_id"),
            "framework": points.labels(rows, framework_label, "framework", "framework_version"),
            "commit": points.labels(rows, lambda c: (c or "")[:12], "benchbed_commit"),
        }

    def _medians(self) -> np.ndarray:
        """Each night's median of its values present (NaN is no value; a night with none: NaN), as
        statistics.median gives it: the middle value, or the mean of the two middle ones. Nights of one size are
        sorted together, as the rows of one matrix."""
        medians = np.full(len(self.sizes), np.nan)
        for size in np.flatnonzero(np.bincount(self.sizes)).tolist():  # np.unique would import numpy.ma
            nights = np.flatnonzero(self.sizes == size)
            values = np.sort(self.values[self.starts[nights, None] + np.arange(size)], axis=1)  # NaN last
            present = (~np.isnan(values)).sum(axis=1)
            middle = np.take_along_axis(values, (present // 2)[:, None], axis=1)[:, 0]
            before = np.take_along_axis(values, np.maximum(present // 2 - 1, 0)[:, None], axis=1)[:, 0]
            found = np.where(present % 2 == 1, middle, (before + middle) / 2)
            medians[nights] = np.where(present == 0, np.nan, found)
        return medians

    def constant(self, kind: str, first: int, count: int) -> Any:
        """The label of `kind` shared by every point of nights [first, first + count), else None."""
        codes, labels = self.labels[kind]
        a, z = self.starts[first], self.starts[first + count - 1] + self.sizes[first + count - 1]
        ran = codes[a:z]
        return (labels[int(ran[0])],) if len(ran) and ran.min() == ran.max() else None

    def night(self, index: int, constant: dict[str, Any]) -> NightValues:
        a = int(self.starts[index])
        rows = self.rows[a : a + int(self.sizes[index])]

        def ran(kind: str) -> tuple[str, ...]:
            codes, labels = self.labels[kind]
            return constant.get(kind) or tuple(dict.fromkeys(labels[c] for c in codes[a : a + len(rows)].tolist()))

        return NightValues(
            night=str(self.night_names[self.night_codes[rows[0]]]),
            started_at=str(self.started_at[self.earliest[index]]),
            values=tuple(self.values[a : a + len(rows)].tolist()), median=float(self.medians[index]),
            spec_ids=ran("spec"), framework_versions=ran("framework"), benchbed_commits=ran("commit"),
            run_ids=tuple(self.points.get("run_id", rows)),
        )  # fmt: skip


_NIGHT_LABELS = (("spec", "spec_ids"), ("framework", "framework_versions"), ("commit", "benchbed_commits"))


class Nights(Sequence[NightValues]):
    """One series' nights, oldest first, each built when it is read: a history of every series of a store shows
    only the last nights of each, and its change points are searched on `medians`."""

    def __init__(self, table: _NightTable, first: int, count: int) -> None:
        self._table, self._first, self._count = table, first, count
        self.medians = table.medians[first : first + count]
        # what ran, per point: a label with one value over the whole series is that value every night
        self._constant = {k: v for k in table.labels if (v := table.constant(k, first, count)) is not None}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> NightValues: ...
    @overload
    def __getitem__(self, index: slice) -> list[NightValues]: ...
    def __getitem__(self, index: int | slice) -> NightValues | list[NightValues]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if not -self._count <= index < self._count:
            raise IndexError(f"night {index} of {self._count}")
        return self._table.night(self._first + index % self._count, self._constant)

    def to_json(self) -> list[dict[str, object]]:
        """Every night as `NightValues` fields in JSON, read column by column: a series of thousands of nights is
        written without building a NightValues for each."""
        table, first, count = self._table, self._first, self._count
        a = int(table.starts[first]) if count else 0
        z = int(table.starts[first + count - 1] + table.sizes[first + count - 1]) if count else 0
        rows = table.rows[a:z]
        edges = (table.starts[first : first + count] - a).tolist() + [z - a]
        values, run_ids = table.values[a:z].tolist(), table.points.get("run_id", rows)
        night_names = [table.night_names[c] for c in table.night_codes[rows[edges[:-1]]].tolist()] if count else []
        ran: dict[str, list[list[str]]] = {}
        for kind, key in _NIGHT_LABELS:
            if kind in self._constant:
                ran[key] = [list(self._constant[kind])] * count
                continue
            codes, labels = table.labels[kind]
            at = [labels[c] for c in codes[a:z].tolist()]
            ran[key] = [list(dict.fromkeys(at[edges[i] : edges[i + 1]])) for i in range(count)]
        started = [str(table.started_at[i]) for i in table.earliest[first : first + count].tolist()]
        spans = list(zip(edges[:-1], edges[1:], strict=True))
        return [
            {"night": str(night), "started_at": at, "median": median, "values": values[i:j], "spec_ids": spec,
             "framework_versions": framework, "benchbed_commits": commit, "run_ids": run_ids[i:j]}
            for night, at, median, (i, j), spec, framework, commit in zip(
                night_names, started, self.medians.tolist(), spans, ran["spec_ids"], ran["framework_versions"],
                ran["benchbed_commits"], strict=True)
        ]  # fmt: skip

    def marked(self) -> dict[int, str]:
        """Night index -> what changed from the night before (spec, framework version), for each night where
        something did."""
        if "spec" in self._constant and "framework" in self._constant:
            return {}
        nights = self[:]
        return {i: text for i in range(1, len(nights)) if (text := _changes(nights[i - 1], nights[i]))}


def _distinct(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) for keys in [0, size): by marking, not sorting, when size is at most a
    few times the number of keys."""
    if size > 4 * len(keys) + 4096:
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct, inverse.reshape(-1)
    seen = np.zeros(size, dtype=bool)
    seen[keys] = True
    distinct = np.flatnonzero(seen)
    lookup = np.zeros(size, dtype=np.int64)
    lookup[distinct] = np.arange(len(distinct))
    return distinct, lookup[keys]


def _changes(before: NightValues, after: NightValues) -> str:
    """What differs between two nights' runs (spec, framework version), '' when nothing."""
    return "; ".join(describe_changes(before.spec_ids, after.spec_ids, before.framework_versions,
                                      after.framework_versions))  # fmt: skip


def gate_night(
    nights: Sequence[NightValues],
    index: int,
    metric: str,
    gate: Gate | GateSettings,
    untrusted: Collection[str] = (),
) -> tuple[Comparison, tuple[str, ...]]:
    """The night at `index` against the points of up to `gate.nights` trusted nights before it (a night marked
    untrusted is no baseline): the rank test, or for a metric in `gate.band` the reference band."""
    baseline_nights: list[NightValues] = []  # the last gate.nights trusted nights before it, read back from it
    for earlier in range(index - 1, -1, -1):
        if len(baseline_nights) == gate.nights:
            break
        if (night := nights[earlier]).night not in untrusted:
            baseline_nights.append(night)
    baseline_nights.reverse()
    baseline = [v for n in baseline_nights for v in n.values]
    direction = True if (found := metric_direction(metric)) is None else found
    if metric in gate.band:
        comparison = compare_to_band(baseline, nights[index].values, direction, gate.band[metric], gate.band_sd)
    else:
        comparison = compare_values(baseline, nights[index].values, direction, alpha=gate.alpha,
                                    min_effect=gate.min_effect)  # fmt: skip
    sequence = [*baseline_nights, nights[index]]
    changes = [_changes(a, b) for a, b in zip(sequence[:-1], sequence[1:], strict=True)]
    return comparison, tuple(c for c in changes if c)


def is_known_metric(name: str) -> bool:
    """A metric this benchbed computes (a framework's own `framework_*` figures included)."""
    return name.removeprefix("framework_") in PRESENTATION


def _watched(points: _Points, rows: np.ndarray, latest: np.ndarray, unknown: list[str]) -> list[str]:
    """The metrics a series' latest run watches (its suite entry's list, else the default ones it reports).
    Names this benchbed does not know (a record from another version) are left out and added to `unknown`."""
    listed = [m for m in (points.get("watch", latest[:1])[0] or "").split(",") if m]
    known = [m for m in listed if is_known_metric(m)]
    unknown += [m for m in listed if not is_known_metric(m)]
    return known or default_watch(set(points.get("metric", rows)))


def build_series(
    points: pd.DataFrame | pa.Table | SuiteRuns,
    metrics: list[str] | None = None,
    nights: int | None = None,
    warnings: list[str] | None = None,
    untrusted: Collection[str] = (),
) -> list[Series]:
    """Every (machine, entry) × watched metric (or `metrics`) in `points` as a Series with its last verdict,
    judged with the gate its latest run recorded (with `nights` previous nights when given). A watched metric
    this benchbed does not know is left out with a line in `warnings`; the series' other metrics stay. The
    nights and change points of all series are computed together (arrays over every point, not loops per night)."""
    table = _Points(points)
    planned: list[tuple[str, str, str, np.ndarray, GateSettings]] = []
    for machine, entry, rows in table.groups():
        latest = table.latest(rows)
        entry_gate = GateSettings.from_json(table.get("gate", latest[-1:])[0])  # the gate its latest run recorded
        if nights is not None:
            entry_gate = replace(entry_gate, nights=nights)
        unknown: list[str] = []
        names = metrics or _watched(table, rows, latest, unknown)
        if unknown and warnings is not None:
            warnings.append(
                f"{entry} on {machine}: its latest run watches {', '.join(unknown)}, unknown to this benchbed "
                f"(written by another version?); showing {', '.join(names) or 'no metric'}"
            )
        for metric in names:
            metric_rows = table.where(rows, "metric", metric)
            if len(metric_rows):
                planned.append((machine, entry, metric, metric_rows, entry_gate))
    every_nights = table.nights([rows for *_, rows, _ in planned])
    found = many_change_points([ns.medians for ns in every_nights], [gate.min_effect for *_, gate in planned])
    out = []
    for (machine, entry, metric, rows, gate), ns, change_points in zip(planned, every_nights, found, strict=True):
        series = Series(
            machine=machine, suite=str(table.get("suite", rows[-1:])[0]), entry=entry, metric=metric,
            unit=str(table.get("unit", rows[-1:])[0]), nights=ns, change_points=change_points, marked=ns.marked(),
        )  # fmt: skip
        if metric_direction(metric) is not None:
            comparison, changes = gate_night(ns, len(ns) - 1, metric, gate, untrusted)
            series.verdict = EntryVerdict(machine, entry, metric, ns[-1].night, comparison, changes)
        out.append(series)
    return out


def night_verdicts(
    points: pd.DataFrame,
    machine: str,
    entry: str,
    night: str,
    metrics: list[str],
    gate: Gate | GateSettings,
    untrusted: Collection[str] = (),
) -> list[EntryVerdict]:
    """Tonight's gate for one entry: each metric's night against the trusted nights before it (absent: no data)."""
    table = _Points(points[(points["machine"] == machine) & (points["entry"] == entry)])
    rows = np.arange(len(table.points))
    verdicts = []
    for metric, nights in zip(metrics, table.nights([table.where(rows, "metric", m) for m in metrics]), strict=True):
        index = next((i for i, n in enumerate(nights) if n.night == night), None)
        if index is None:
            trusted = [n for n in nights if n.night not in untrusted][-gate.nights :]
            comparison = compare_values([v for n in trusted for v in n.values], [], True)
            verdicts.append(EntryVerdict(machine, entry, metric, night, comparison))
            continue
        comparison, changes = gate_night(nights, index, metric, gate, untrusted)
        verdicts.append(EntryVerdict(machine, entry, metric, night, comparison, changes))
    return verdicts
