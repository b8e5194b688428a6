"""Metric tables for reports: values from RunRecords grouped by family, formatted, and as Markdown."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchbed.metrics import METRICS
from benchbed.metrics.registry import display_order, family_of
from benchbed.metrics.series import sandbox_levels
from benchbed.record import MetricValue, RunRecord
from benchbed.secrets import redact
from benchbed.trace import Trace

FRAMEWORK_PREFIX = "framework_"

# A sandbox-bench sweep's per-level table (series.sandbox_levels): field -> (column heading, scale)
SANDBOX_BENCH_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("level", "level", 1), ("attempts", "sandboxes", 1), ("failures", "init failures", 1),
    ("failure_rate", "failure rate", 1), ("reasons", "reasons", 1), ("start_p50_s", "start p50 ms", 1e3),
    ("start_p99_s", "start p99 ms", 1e3), ("queue_p99_s", "queue p99 ms", 1e3), ("starts_per_s", "starts/s", 1),
    ("start_ratio_vs_bare", "bare fork/exec ÷ starts", 1),
)  # fmt: skip


@dataclass(frozen=True)
class MetricRow:
    """One metric across runs: our value per run and the framework's own figure per run (None if absent)."""

    family: str
    name: str
    unit: str
    description: str
    ours: tuple[MetricValue | None, ...]
    framework: tuple[MetricValue | None, ...]

    @property
    def has_framework(self) -> bool:
        return any(v is not None for v in self.framework)


def metric_rows(records: list[RunRecord]) -> list[MetricRow]:
    """Every metric any record has, ours and `framework_*` side by side, in family order."""
    names: set[str] = set()
    for record in records:
        names.update(n.removeprefix(FRAMEWORK_PREFIX) for n in record.metrics)
    rows = []
    for name in sorted(names, key=display_order):
        ours = tuple(r.metrics.get(name) for r in records)
        theirs = tuple(r.metrics.get(FRAMEWORK_PREFIX + name) for r in records)
        unit = next((v.unit for v in (*ours, *theirs) if v is not None and v.unit), "")
        definition = METRICS.get(name)
        rows.append(MetricRow(family_of(name), name, unit, definition.description if definition else "", ours, theirs))
    return rows


def format_value(value: MetricValue | None) -> str:
    """Four significant digits; an absent metric is shown as an em dash (never as 0)."""
    if value is None:
        return "—"
    if not math.isfinite(value.value):
        return str(value.value)
    return f"{value.value:.4g}"


def run_label(record: RunRecord) -> str:
    """Short column label: spec name, matrix point if any, and run id."""
    name = str(record.spec.get("name") or record.spec_id)
    variant = record.spec.get("variant") or {}
    point = ",".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in variant.items())
    return f"{name}[{point}] ({record.run_id})" if point else f"{name} ({record.run_id})"


def status_line(record: RunRecord) -> str:
    """One line on how the run ended (secrets redacted); failed and partial runs say so first."""
    adapter = record.adapter
    origin = " ".join(p for p in (adapter.name, adapter.framework, adapter.version, adapter.mode) if p)
    line = f"status: {record.status.upper() if record.status != 'succeeded' else record.status} — {origin}"
    if record.error is not None:
        code = f" (exit code {record.error.exit_code})" if record.error.exit_code is not None else ""
        line += f" — error{code}: {record.error.message}"
    return redact(line)


@dataclass(frozen=True)
class TextTable:
    """A small table already formatted as text: a header and rows of cells."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _cell(value: Any, scale: float = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "—"
    if isinstance(value, float):
        return f"{value * scale:.4g}" if math.isfinite(value) else "—"
    return str(value)


def sandbox_bench_table(trace: Trace) -> TextTable | None:
    """A sandbox-bench sweep's per-level table, from the same series as the Sandboxes figures (None for other
    runs); columns absent from the series (e.g. the bare fork/exec ratio without a baseline) are left out."""
    if "sandbox_bench" not in trace.meta.extra:
        return None
    levels = sandbox_levels(trace)
    if not len(levels):
        return None
    columns = [(field, name, scale) for field, name, scale in SANDBOX_BENCH_COLUMNS if field in levels.columns]
    rows = levels.to_dict("records")
    return TextTable(
        tuple(name for _, name, _ in columns),
        tuple(tuple(_cell(row[f], scale) for f, _, scale in columns) for row in rows),
    )


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: TextTable) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(c) for c in table.header) + " |", "|" + "---|" * len(table.header)]
    lines.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows)
    return lines


def markdown_summary(records: list[RunRecord], traces: Sequence[Trace] = ()) -> str:
    """Status and warnings per run (and a sandbox-bench run's per-level table when its trace is given), then
    the metric table (one value column per run when there are several)."""
    lines = []
    for i, record in enumerate(records):
        lines.append(f"## {_md_cell(run_label(record))}")
        lines.append(status_line(record))
        lines.extend(f"- warning: {_md_cell(redact(w))}" for w in record.warnings)
        lines.append("")
        levels = sandbox_bench_table(traces[i]) if i < len(traces) else None
        if levels is not None:
            lines += ["Sandbox starts per concurrency level:", "", *_md_table(levels), ""]
    rows = metric_rows(records)
    if not rows:
        lines.append("No metrics in these records.")
        return "\n".join(lines) + "\n"
    with_framework = any(row.has_framework for row in rows)
    if len(records) == 1:
        header = ["family", "metric", "value", "unit"] + (["framework"] if with_framework else [])
    else:
        header = ["family", "metric", "unit", *(_md_cell(run_label(r)) for r in records)]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        if len(records) == 1:
            cells = [row.family, row.name, format_value(row.ours[0]), row.unit]
            cells += [format_value(row.framework[0])] if with_framework else []
        else:
            values = [
                format_value(o) + (f" (fw {format_value(f)})" if f is not None else "")
                for o, f in zip(row.ours, row.framework, strict=True)
            ]
            cells = [row.family, row.name, row.unit, *values]
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
