"""The HTML page of `benchbed plan`: the simulated curve, the target, the simulated and closed-form answers."""

from __future__ import annotations

import html
import re

from benchbed.metrics import METRICS
from benchbed.report.plots import _figure, to_svg
from benchbed.sim.plan import PlanResult


def plan_html(result: PlanResult) -> str:
    """A self-contained HTML page with the simulated curve, the target and the two answers."""
    fig, ax = _figure(height=3.6)
    xs = [x for x, y in result.curve if y is not None]
    ys = [y for x, y in result.curve if y is not None]
    ax.plot(xs, ys, "o-", color="#1f77b4", label=f"simulated {result.target.split('<')[0].split('>')[0]}")
    threshold = float(re.split(r"<=|>=|<|>", result.target)[1])
    ax.axhline(threshold, color="#d62728", linestyle="--", label=f"target {result.target}")
    if result.answer is not None:
        ax.axvline(result.answer, color="#2ca02c", label=f"simulated answer {result.answer}")
    if result.closed_form is not None:
        ax.axvline(result.closed_form, color="#9467bd", linestyle=":", label=f"closed form {result.closed_form:.4g}")
    if xs and min(xs) > 0 and max(xs) / min(xs) > 10:
        ax.set_xscale("log")
    unit = METRICS[re.split(r"<=|>=|<|>", result.target)[0]].unit
    ax.set_xlabel(f"{result.vary} ({'slots' if result.vary == 'sim.concurrency' else 'versions'})")
    ax.set_ylabel(f"{re.split(r'<=|>=|<|>', result.target)[0]} ({unit})")
    ax.set_title(f"{result.spec}: {result.target} by {result.vary}")
    ax.legend(loc="best", fontsize=8)
    rows = "".join(f"<tr><td>{x}</td><td>{'' if y is None else f'{y:.4g}'}</td></tr>" for x, y in result.curve)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>benchbed plan</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td,th{padding:0 1em}</style></head><body>"
        f"<h1>benchbed plan: {html.escape(result.spec)}</h1>"
        f"<p>Target <b>{html.escape(result.target)}</b>, varying <code>{html.escape(result.vary)}</code>: "
        f"simulated answer <b>{result.answer}</b> ({html.escape(result.note)}; metric there "
        f"{'n/a' if result.answer_metric is None else f'{result.answer_metric:.4g}'}, holds: {result.holds}); "
        f"closed form {'n/a' if result.closed_form is None else f'{result.closed_form:.4g}'} "
        f"({html.escape(result.closed_form_formula)}).</p>{to_svg(fig)}"
        f"<table><tr><th>{html.escape(result.vary)}</th><th>simulated</th></tr>{rows}</table></body></html>"
    )
