"""The metric reference, rendered from the metric registry (benchbed.metrics.METRICS): one row per metric with
its unit, direction and definition, so a metric added or redefined in code changes the page with no hand edit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gen_common import DocsError, cell

DIRECTION = {True: "higher", False: "lower", None: "—"}


def undefined(metrics: Mapping[str, Any]) -> list[str]:
    """Metrics registered without a unit or a definition."""
    return [name for name, m in metrics.items() if not (m.description or "").strip() or m.unit is None]


def metrics_markdown(metrics: Mapping[str, Any]) -> str:
    """A table per metric family (in registry order), or one table when the registry has no families."""
    missing = undefined(metrics)
    if missing:
        raise DocsError(f"metrics registered without a definition: {', '.join(missing)}")
    families: dict[str, list[Any]] = {}
    for m in metrics.values():
        families.setdefault(getattr(m, "family", "") or "", []).append(m)
    out = []
    for family, members in families.items():
        if family:
            out += [f"### {family}", ""]
        out += ["| metric | unit | better | definition |", "|---|---|---|---|"]
        out += [
            f'| <span id="{m.name}">`{m.name}`</span> | {cell(m.unit) or "—"} | {DIRECTION[m.higher_is_better]} '
            f"| {cell(m.description)} |"
            for m in members
        ]
        out.append("")
    return "\n".join(out)
