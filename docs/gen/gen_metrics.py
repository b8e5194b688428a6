"""The metric reference, rendered from the metric registry (benchbed.metrics): one table per family in the
registry's display order, one row per metric with its unit, direction, whether it is a headline figure, and its
definition, so a metric added, moved or redefined in code changes the page with no hand edit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gen_common import DocsError, cell

DIRECTION = {True: "higher", False: "lower", None: "—"}


def undefined(metrics: Mapping[str, Any]) -> list[str]:
    """Metrics registered without a unit or a definition."""
    return [name for name, m in metrics.items() if not (m.description or "").strip() or m.unit is None]


def metrics_markdown(metrics: Mapping[str, Any], presentation: Mapping[str, Any]) -> str:
    """A table per family, families and rows in the order of `presentation` (the registry's PRESENTATION)."""
    missing = undefined(metrics) + [name for name in metrics if name not in presentation]
    if missing:
        raise DocsError(f"metrics registered without a definition or a presentation entry: {', '.join(missing)}")
    families: dict[str, list[tuple[Any, Any]]] = {}
    for name, shown in presentation.items():
        if name in metrics:
            families.setdefault(shown.family, []).append((metrics[name], shown))
    out = []
    for family, members in sorted(families.items(), key=lambda item: item[0] == "other"):
        out += [f"### {family[0].upper()}{family[1:]}", ""]
        out += ["| metric | unit | better | headline | definition |", "|---|---|---|---|---|"]
        out += [
            f'| <span id="{m.name}">`{m.name}`</span> | {cell(m.unit) or "—"} | {DIRECTION[shown.higher_is_better]} '
            f"| {'yes' if shown.headline else ''} | {cell(m.description)} |"
            for m, shown in members
        ]
        out.append("")
    return "\n".join(out)
