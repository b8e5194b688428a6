"""The HTML page of `benchbed reproduce --html`: per study, the published figures beside the reproduced ones, with
every assumption the study's specs make."""

from __future__ import annotations

import html

from benchbed.sim.reproduce import Row, assumptions, studies, study_of


def _cell(value: float | list[float] | str) -> str:
    if isinstance(value, list):
        return f"{value[0]:.3g}–{value[1]:.3g}"
    return value if isinstance(value, str) else f"{value:.4g}"


def _study_section(study: str, rows: list[Row]) -> str:
    body = "".join(
        f"<tr class='{'ok' if row.ok else 'miss'}'><td>{html.escape(row.case)}</td><td>{html.escape(row.quantity)}</td>"
        f"<td>{html.escape(_cell(row.published))}</td><td>{row.reproduced:.4g}</td><td>{html.escape(row.tolerance)}</td>"
        f"<td>{'yes' if row.ok else 'NO'}</td><td>{row.kind}</td><td>{html.escape(', '.join(row.inputs))}</td>"
        f"<td>{html.escape(row.published_quality)}</td></tr>"
        for row in rows
    )
    assumed = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in assumptions(study))
    held = sum(row.ok for row in rows)
    return (
        f"<h2>{html.escape(studies()[study].title)}</h2>"
        f"<p>{held} of {len(rows)} rows within tolerance; "
        f"{sum(row.kind == 'prediction' for row in rows)} predictions.</p>"
        "<table><tr><th>case</th><th>quantity</th><th>published</th><th>reproduced</th><th>tolerance</th>"
        f"<th>within</th><th>kind</th><th>inputs</th><th>published accuracy (data: the simulator models no "
        f"learning)</th></tr>{body}</table>"
        f"<h3>Assumptions</h3><ul>{assumed}</ul>"
    )


def reproduce_html(rows: list[Row]) -> str:
    """A self-contained page, one section per study present in `rows`, in registry order."""
    by_study: dict[str, list[Row]] = {}
    for row in rows:
        by_study.setdefault(study_of(row.case), []).append(row)
    sections = "".join(_study_section(study, by_study[study]) for study in studies() if study in by_study)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>benchbed reproduce</title><style>"
        "body{font-family:sans-serif;max-width:80em;margin:2em auto}td,th{padding:0.2em 0.6em;text-align:left}"
        "tr.miss td{color:#b00}code{font-size:0.85em}</style></head><body><h1>benchbed reproduce</h1>"
        f"{sections}</body></html>"
    )
