"""The nightly page: per entry and watched metric, the series over nights with its change points and the last
night's verdict; plus the same verdicts as a Markdown message and as JUnit XML for CI systems."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import jinja2
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from benchbed.logtext import strip_ansi
from benchbed.nightly.history import Series
from benchbed.nightly.regimes import EntryRegime
from benchbed.nightly.run import Night
from benchbed.nightly.stats import VERDICTS, EntryVerdict
from benchbed.outputs import write_output
from benchbed.record import RunRecord, utc_now
from benchbed.report.plots import to_svg
from benchbed.report.render import TEMPLATES

VERDICT_COLORS = {
    "regression": "#d62728", "improvement": "#2ca02c", "unchanged": "#7f7f7f", "insufficient_data": "#ff7f0e",
}  # fmt: skip
MAX_TICKS = 12


def _number(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.4g}"


def _change(verdict: EntryVerdict) -> str:
    relative = verdict.comparison.relative_change
    return "—" if relative is None else f"{relative:+.1%}"


def counts_line(verdicts: Sequence[EntryVerdict], failed: Sequence[RunRecord] = ()) -> str:
    """'1 regression, 0 improvements, …' in verdict order, plus failed runs when there are any."""
    counts = Counter(v.verdict for v in verdicts)
    plural = {"regression": "regressions", "improvement": "improvements"}
    parts = [f"{counts[k]} {plural.get(k, k) if counts[k] != 1 else k}".replace("_", " ") for k in VERDICTS]
    if failed:
        parts.append(f"{len(failed)} failed run{'s' if len(failed) != 1 else ''}")
    return ", ".join(parts)


def markdown_summary(
    title: str,
    verdicts: Sequence[EntryVerdict],
    failed: Sequence[RunRecord] = (),
    series: Sequence[Series] = (),
    regimes: Sequence[EntryRegime] = (),
) -> str:
    """A short message for a chat channel or PR comment: counts, each entry's diagnosis (and whether it changed
    since the night before), every verdict that is not `unchanged`, and each series' change points (the first
    night of each new level, as on the page and in `history --json`)."""
    worst = "❌" if failed or any(v.verdict == "regression" for v in verdicts) else "✅"
    lines = [f"{worst} **{title}**: {counts_line(verdicts, failed)}", ""]
    if regimes:
        lines += ["Diagnosis:", *(f"- {r.sentence()}" for r in regimes), ""]
    notable = [v for v in verdicts if v.verdict != "unchanged"]
    if notable:
        lines += ["| entry | metric | verdict | baseline | tonight | change | p |", "|---|---|---|---|---|---|---|"]
        for v in notable:
            c = v.comparison
            p = "—" if c.p_value is None else f"{c.p_value:.2g}"
            lines.append(f"| {v.entry} | {v.metric} | **{v.verdict}** | {_number(c.baseline_median)} "
                         f"| {_number(c.candidate_median)} | {_change(v)} | {p} |")  # fmt: skip
        lines.append("")
    lines += dict.fromkeys(f"- {v.entry}: {change}" for v in notable for change in v.changes)
    for record in failed:
        message = record.error.message if record.error else record.status
        entry = record.suite.entry if record.suite else record.spec_id
        lines.append(f"- {entry}: run {record.run_id} {record.status}: {message}")
    levels = [(s, level) for s in series for level in s.levels()]
    if levels:
        lines += ["", "Change points (first night of a new level of the nightly medians):"]
        lines += [f"- {s.entry} {s.metric}: night {night}, {_number(before)} → {_number(after)}"
                  for s, (night, before, after) in levels]  # fmt: skip
    return "\n".join(lines).rstrip() + "\n"


# Characters XML 1.0 cannot hold at all (control characters other than tab and line breaks, lone surrogates,
# U+FFFE/U+FFFF): a parser refuses the whole file over one of them.
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` as XML can hold it: ANSI colours and links removed, other illegal characters as U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", strip_ansi(text))


def junit_xml(suite: str, verdicts: Sequence[EntryVerdict], failed: Sequence[RunRecord] = ()) -> str:
    """JUnit XML: one test case per (entry, metric); a regression is a failure, a failed run an error, and
    insufficient data is skipped (shown, never passed). Every text is made XML-safe (a log tail's colours)."""
    root = ET.Element("testsuites", name=xml_text(f"benchbed nightly {suite}"))
    cases = ET.SubElement(root, "testsuite", name=xml_text(suite), tests=str(len(verdicts) + len(failed)),
                          failures=str(sum(v.verdict == "regression" for v in verdicts)), errors=str(len(failed)),
                          skipped=str(sum(v.verdict == "insufficient_data" for v in verdicts)))  # fmt: skip
    for v in verdicts:
        case = ET.SubElement(cases, "testcase", classname=xml_text(f"{suite}.{v.entry}"), name=xml_text(v.metric))
        detail = xml_text("\n".join([v.comparison.reason, *v.changes]))
        reason = xml_text(v.comparison.reason)
        if v.verdict == "regression":
            ET.SubElement(case, "failure", message=f"regression: {reason}", type="regression").text = detail
        elif v.verdict == "insufficient_data":
            ET.SubElement(case, "skipped", message=f"insufficient data: {reason}")
        else:
            ET.SubElement(case, "system-out").text = f"{v.verdict}: {detail}"
    for record in failed:
        entry = record.suite.entry if record.suite else record.spec_id
        case = ET.SubElement(cases, "testcase", classname=xml_text(f"{suite}.{entry}"), name=f"run {record.run_id}")
        message = record.error.message if record.error else f"run {record.status}"
        ET.SubElement(case, "error", message=xml_text(message), type=record.status).text = xml_text(
            record.error.log_tail if record.error else ""
        )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def night_label(night: str) -> str:
    """'MM-DD HH:MM' from a night id ('20261130T021500Z-…'); the id itself when it is not one."""
    stamp = night.split("-", 1)[0]
    if len(stamp) >= 13 and stamp[8] == "T":
        return f"{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"
    return night[:11]


def history_plot(series: Series) -> str:
    """The series over nights: each repeat as a dot, the nightly median as a line, change points as dashed red
    lines, spec/framework changes as dotted grey lines, and the last night coloured by its verdict."""
    fig = Figure(figsize=(9.5, 3.4), dpi=96)
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.18, top=0.8)
    ax = fig.add_subplot()
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    x = np.arange(len(series.nights))
    for i, night in enumerate(series.nights):
        ax.scatter([i] * len(night.values), night.values, s=12, color="#1f77b4", alpha=0.5, linewidths=0)
    ax.plot(x, [n.median for n in series.nights], color="#1f77b4", marker="o", markersize=4, linewidth=1.2)
    for i in series.change_points:
        ax.axvline(i - 0.5, color="#d62728", linestyle="--", linewidth=1.2)
    for i in series.marked:
        ax.axvline(i - 0.5, color="#555555", linestyle=":", linewidth=1.2)
    handles = [
        Line2D([], [], color="#1f77b4", marker="o", linestyle="none", alpha=0.5, markersize=4, label="repeat"),
        Line2D([], [], color="#1f77b4", marker="o", markersize=4, label="night median"),
        Line2D([], [], color="#d62728", linestyle="--", label="change point"),
        Line2D([], [], color="#555555", linestyle=":", label="spec / framework changed"),
    ]
    if series.verdict is not None:
        color = VERDICT_COLORS[series.verdict.verdict]
        ax.scatter([x[-1]], [series.nights[-1].median], s=90, facecolors="none", edgecolors=color, linewidths=2)
        handles.append(Line2D([], [], color=color, marker="o", markerfacecolor="none", linestyle="none",
                              label=f"last night: {series.verdict.verdict.replace('_', ' ')}"))  # fmt: skip
    step = max(1, math.ceil(len(x) / MAX_TICKS))
    ax.set_xticks(x[::step], [night_label(n.night) for n in series.nights][::step], fontsize=8)
    ax.set_xlim(-0.6, len(x) - 0.4)
    ax.set_xlabel("night (UTC start, oldest first)")
    ax.set_ylabel(f"{series.metric} ({series.unit})", fontsize=9)
    fig.suptitle(f"{series.entry}: {series.metric} per night", x=0.09, y=0.97, ha="left", fontsize=10)
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncols=len(handles), fontsize=7,
              frameon=False)  # fmt: skip
    return to_svg(fig)


def render_history_html(
    title: str, series: Sequence[Series], failed: Sequence[RunRecord] = (), regimes: Sequence[EntryRegime] = ()
) -> str:
    """The history page: each entry's diagnosis, a verdict table, then one plot per series grouped by entry."""
    verdicts = [s.verdict for s in series if s.verdict is not None]
    entries: dict[tuple[str, str], list[tuple[Series, str]]] = {}
    for s in series:
        entries.setdefault((s.machine, s.entry), []).append((s, history_plot(s)))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)  # fmt: skip
    template = env.get_template("nightly.html.j2")
    return template.render(
        title=title, entries=entries, verdicts=verdicts, failed=list(failed), colors=VERDICT_COLORS, regimes=regimes,
        summary=counts_line(verdicts, failed), number=_number, change=_change,
        generated_at=utc_now().strftime("%Y-%m-%d %H:%M:%S UTC"),
    )  # fmt: skip


def write_night(night: Night, page: Path | None = None, junit: Path | None = None) -> Path:
    """Keep a night's page, Markdown summary and verdicts in its folder (the page at `page` when given), plus
    JUnit XML at `junit`; returns the page's path."""
    html = render_history_html(night.title, night.series, night.failed, night.regimes)
    written = write_text(page or night.folder / "nightly.html", html)
    write_text(night.folder / "summary.md", night_summary(night))
    write_text(night.folder / "verdicts.json", json.dumps([v.to_json() for v in night.verdicts], indent=2))
    if junit is not None:
        write_text(junit, junit_xml(night.suite.name, night.verdicts, night.failed))
    return written


def night_summary(night: Night) -> str:
    """The night's Markdown summary (what `benchbed nightly` prints)."""
    return markdown_summary(night.title, night.verdicts, night.failed, night.series, night.regimes)


def write_text(path: Path, text: str) -> Path:
    """Write atomically (benchbed.outputs) so a reader never sees half a page."""
    return write_output(path, text)
