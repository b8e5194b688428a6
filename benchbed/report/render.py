"""write_report: one self-contained HTML file (inline CSS and SVG, no network) and a Markdown summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from benchbed.diagnosis import Diagnosis, diagnose_record
from benchbed.outputs import write_output
from benchbed.record import RunRecord, utc_now
from benchbed.report.comparison import build_comparison, markdown_comparison
from benchbed.report.sections import Section, build_sections
from benchbed.report.tables import MetricRow, format_value, markdown_summary, metric_rows, run_label, status_line
from benchbed.secrets import redact
from benchbed.trace import Trace

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class RunView:
    """What the template shows for one run."""

    label: str
    record: RunRecord
    trace: Trace
    status_line: str
    problem: bool
    warnings: list[str]
    log_tail: str
    sections: list[Section]
    diagnosis: Diagnosis | None


def _run_view(record: RunRecord, trace: Trace) -> RunView:
    warnings = [redact(w) for w in dict.fromkeys([*record.warnings, *trace.meta.warnings])]
    partial_trace = trace.meta.partial and record.status != "partial"
    if partial_trace:
        warnings.insert(0, "the trace is marked partial (the run crashed or its logs are truncated)")
    return RunView(
        label=run_label(record),
        record=record,
        trace=trace,
        status_line=status_line(record),
        problem=record.status != "succeeded" or trace.meta.partial,
        warnings=warnings,
        log_tail=redact(record.error.log_tail) if record.error and record.error.log_tail else "",
        sections=build_sections(record, trace),
        diagnosis=diagnose_record(record) if record.metrics else None,
    )


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["metric"] = format_value
    return env


def render_html(runs: list[tuple[RunRecord, Trace]]) -> str:
    """The report page for these runs as one HTML string."""
    if not runs:
        raise ValueError("write_report needs at least one (RunRecord, Trace) pair")
    records = [record for record, _ in runs]
    rows: list[MetricRow] = metric_rows(records)
    families: dict[str, list[MetricRow]] = {}
    for row in rows:
        families.setdefault(row.family, []).append(row)
    template = _environment().get_template("report.html.j2")
    return template.render(
        runs=[_run_view(record, trace) for record, trace in runs],
        families=families,
        comparison=build_comparison(runs) if len(runs) > 1 else None,
        with_framework=any(row.has_framework for row in rows),
        generated_at=utc_now().strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def write_report(runs: list[tuple[RunRecord, Trace]], out_html: Path) -> str:
    """Write the HTML report to `out_html` (atomically) and return the Markdown summary for the terminal."""
    out_html = Path(out_html)
    html = render_html(runs)
    write_output(out_html, html)
    records = [record for record, _ in runs]
    comparison = markdown_comparison(records) if len(records) > 1 else ""
    return markdown_diagnoses(records) + comparison + markdown_summary(records, [trace for _, trace in runs])


def markdown_diagnoses(records: list[RunRecord]) -> str:
    """The diagnosis of each run as a Markdown list, the first thing the summary says."""
    lines = ["## Diagnosis", ""]
    for record in records:
        headline = diagnose_record(record).headline() if record.metrics else "cannot tell: the run has no metrics"
        lines.append(f"- {run_label(record)}: {headline}")
    return "\n".join(lines) + "\n\n"
