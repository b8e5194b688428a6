"""Comparing runs: group repeats by (adapter, configuration), median and an interval with its coverage per metric,
what differs, per-GPU figures and matrix curves. Pure functions of RunRecords, shared by the report and
`benchbed compare`."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchbed.record import RunRecord

CONFIDENCE = 0.95
GPU_DENOMINATOR = "every GPU of the run: trainer + generator GPUs (colocated: the shared GPUs counted once)"
# Spec fields that never say what was measured (the matrix point is shown by its flattened fields).
IGNORED_SPEC_FIELDS = ("description", "matrix", "variant", "repeats", "source")
CONFIGURATION_IGNORES = ("description", "repeats", "source")  # a group is one configuration, however often it ran
LABEL_FIELDS = 2  # differing fields that name groups whose spec names are the same
PER_GPU_SUFFIX = "_per_gpu"
PER_GPU_METRICS = ("trainer_throughput_sps",)  # samples trained per second: what the GPUs were bought for


@dataclass(frozen=True)
class RunGroup:
    """Runs of one configuration with one adapter: repeats of the same measurement, with a label unique in its
    comparison (`spec_id` is its first run's)."""

    adapter: str
    spec_id: str
    records: tuple[RunRecord, ...]
    label: str

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def variant(self) -> dict[str, Any]:
        return dict(self.records[0].spec.get("variant") or {})


def _base_label(adapter: str, record: RunRecord) -> str:
    """Spec name with the matrix point, or with adapter and mode, short enough for an axis label."""
    name = str(record.spec.get("name") or record.spec_id)
    variant = record.spec.get("variant") or {}
    point = ",".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in variant.items())
    mode = record.adapter.mode
    return f"{name}[{point}]" if point else f"{name} ({adapter}{' ' + mode if mode else ''})"


@dataclass(frozen=True)
class Interval:
    """Median of n values and a distribution-free interval for it with its actual coverage."""

    median: float
    low: float
    high: float
    n: int
    coverage: float
    is_range: bool = False  # the interval is [min, max]: too few values for a narrower one

    def coverage_label(self) -> str:
        """What the interval is, with its actual coverage: 'range, 87.5%', 'interval, 97.9%' or 'single run'."""
        if self.n == 1:
            return "single run"
        return f"{'range' if self.is_range else 'interval'}, {self.coverage * 100:.3g}%"

    def text(self, digits: int = 4) -> str:
        """'median [low, high] (range, 87.5%) n=4'; 'value (single run) n=1'."""
        if self.n == 1:
            return f"{self.median:.{digits}g} (single run) n=1"
        interval = f"[{self.low:.{digits}g}, {self.high:.{digits}g}]"
        return f"{self.median:.{digits}g} {interval} ({self.coverage_label()}) n={self.n}"


def configuration(record: RunRecord) -> str:
    """The run's configuration: its spec without the fields that do not change what is measured (`repeats`,
    description, source), so one configuration run once and run seven times is one group."""
    spec = {k: v for k, v in record.spec.items() if k not in CONFIGURATION_IGNORES}
    return json.dumps(spec, sort_keys=True, default=str)


def group_runs(records: Iterable[RunRecord]) -> list[RunGroup]:
    """Runs grouped by (adapter name, configuration), in order of first appearance. Labels are the spec name with
    its matrix point (or adapter and mode), made unique by the fields that differ (`sim.concurrency=8`)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((record.adapter.name, configuration(record)), []).append(record)
    labels = {key: _base_label(key[0], rs[0]) for key, rs in groups.items()}
    for label, count in Counter(labels.values()).items():
        if count > 1:
            same = [key for key in groups if labels[key] == label]
            unlabelled = [RunGroup(key[0], groups[key][0].spec_id, tuple(groups[key]), "") for key in same]
            fields = [field for field, _ in what_differs(unlabelled)[:LABEL_FIELDS]]
            described = [_describe(groups[key][0]) for key in same]
            for key, fields_of in zip(same, described, strict=True):
                parts = ",".join(f"{f.removeprefix('spec.')}={fields_of.get(f, '—')}" for f in fields)
                labels[key] = f"{label} {parts}" if parts else f"{label} {groups[key][0].spec_id.rsplit('-', 1)[-1]}"
    return [RunGroup(adapter, rs[0].spec_id, tuple(rs), labels[(adapter, config)])
            for (adapter, config), rs in groups.items()]  # fmt: skip


def _binomial_cdf(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) ≤ k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """Median with the order-statistic interval [x_(j), x_(n+1−j)] of the narrowest j reaching `confidence`.

    Below six values no such interval reaches 95%: the range [min, max] is returned with its smaller coverage
    (1 − 2^(1−n)), so a reader sees how weak the interval is. None when there are no finite values."""
    xs = sorted(v for v in values if math.isfinite(v))
    n = len(xs)
    if n == 0:
        return None
    median = (xs[(n - 1) // 2] + xs[n // 2]) / 2
    if n == 1:
        return Interval(median, median, median, 1, 0.0)
    j = 1
    while j + 1 <= n // 2 and 1 - 2 * _binomial_cdf(j, n) >= confidence:
        j += 1
    coverage = 1 - 2 * _binomial_cdf(j - 1, n)
    return Interval(median, xs[j - 1], xs[n - j], n, coverage, is_range=j == 1)


def gpu_count(record: RunRecord) -> int | None:
    """GPUs of the run when its spec states resources (every GPU, trainer and generator), else None."""
    resources = record.spec.get("resources")
    if not isinstance(resources, dict):
        return None
    trainer, generator = int(resources.get("trainer_gpus") or 0), int(resources.get("generator_gpus") or 0)
    total = max(trainer, generator) if resources.get("colocated") else trainer + generator
    return total or None


def metric_values(record: RunRecord) -> dict[str, float]:
    """The record's metrics, plus per-GPU figures (trained samples/s and every tokens/s metric) when GPUs are known."""
    out = {name: m.value for name, m in record.metrics.items()}
    gpus = gpu_count(record)
    if gpus:
        for name, m in record.metrics.items():
            if name in PER_GPU_METRICS or (m.unit == "tokens/s" and not name.startswith("framework_")):
                out[name.removesuffix("_sps") + PER_GPU_SUFFIX] = m.value / gpus
    return out


def per_gpu_unit(name: str, records: Sequence[RunRecord]) -> str:
    """Unit of a per-GPU figure derived by metric_values."""
    base = name.removesuffix(PER_GPU_SUFFIX)
    for record in records:
        for source in (base, base + "_sps"):
            if source in record.metrics:
                return f"{record.metrics[source].unit} per GPU"
    return "per GPU"


def aggregate(groups: Sequence[RunGroup], names: Iterable[str] | None = None) -> dict[str, list[Interval | None]]:
    """Per metric, one Interval per group (None where no run of the group has it), in family order of `names`."""
    per_group = [[metric_values(r) for r in g.records] for g in groups]
    if names is None:
        names = dict.fromkeys(n for runs in per_group for values in runs for n in values)
    return {name: [median_interval([v[name] for v in runs if name in v]) for runs in per_group] for name in names}


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data}


def _describe(record: RunRecord) -> dict[str, str]:
    """Framework, version, mode, machine and GPUs first, then every spec field (dotted)."""
    spec = {k: v for k, v in record.spec.items() if k not in IGNORED_SPEC_FIELDS}
    fields = {
        "framework": record.adapter.framework or record.adapter.name,
        "framework version": record.adapter.version or "—", "mode": record.adapter.mode or "—",
        "machine": record.machine.name,
        "GPUs (denominator)": str(gpu_count(record) or "—"),
    }  # fmt: skip
    fields.update({f"spec.{k}": _text(v) for k, v in _flatten(spec).items()})
    return fields


def _text(value: Any) -> str:
    return "—" if value is None else ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def what_differs(groups: Sequence[RunGroup]) -> list[tuple[str, list[str]]]:
    """(field, one value per group) for every spec field, framework version, mode or machine that is not the same
    everywhere; repeats that disagree within a group show their values joined by ' / '. Fields whose values differ
    among the groups that have them come first; fields only some groups have ('—' elsewhere) follow."""
    described = []
    for group in groups:
        runs = [_describe(r) for r in group.records]
        keys = dict.fromkeys(k for run in runs for k in run)
        described.append({k: " / ".join(dict.fromkeys(run.get(k, "—") for run in runs)) for k in keys})
    fields = dict.fromkeys(k for d in described for k in d)
    rows = []
    for field in fields:
        values = [d.get(field, "—") for d in described]
        if len(set(values)) > 1:
            rows.append((field, values))
    return sorted(rows, key=lambda row: len({v for v in row[1] if v != "—"}) < 2)


@dataclass(frozen=True)
class Curve:
    """One line of a matrix plot: a metric against one axis, the other axes held at `fixed`."""

    axis: str
    fixed: dict[str, Any]
    x: tuple[float, ...]
    y: tuple[Interval, ...]


def matrix_axes(groups: Sequence[RunGroup]) -> list[str]:
    """Matrix fields with at least two numeric values among the groups (one curve plot per axis)."""
    values: dict[str, set[Any]] = {}
    for group in groups:
        for key, value in group.variant.items():
            values.setdefault(key, set()).add(value)
    return [
        key for key, seen in values.items()
        if len(seen) > 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen)
    ]  # fmt: skip


def matrix_curves(groups: Sequence[RunGroup], axis: str, name: str) -> list[Curve]:
    """`name` against `axis`, one curve per combination of the other matrix fields; points sorted by x."""
    lines: dict[tuple[tuple[str, str], ...], list[tuple[float, Interval]]] = {}
    fixed_of: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for group in groups:
        variant = group.variant
        if axis not in variant:
            continue
        interval = median_interval([v[name] for v in map(metric_values, group.records) if name in v])
        if interval is None:
            continue
        fixed = {k: v for k, v in variant.items() if k != axis}
        key = tuple(sorted((k, repr(v)) for k, v in fixed.items()))
        fixed_of[key] = fixed
        lines.setdefault(key, []).append((float(variant[axis]), interval))
    curves = []
    for key, points in lines.items():
        points.sort(key=lambda p: p[0])
        curves.append(Curve(axis, fixed_of[key], tuple(p[0] for p in points), tuple(p[1] for p in points)))
    return curves
