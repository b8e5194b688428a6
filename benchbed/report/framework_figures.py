"""The frameworks' own figures (`framework_<name>`) of a comparison, beside benchbed's metric of the same name, with
each framework's definition: a figure two frameworks both report is flagged as not the same quantity, since each
defines it its own way (NeMo-RL's buffer starvation is not verl's trainer idle ratio); benchbed's metric is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchbed.adapter import FigureDefinition, get_adapter
from benchbed.errors import AdapterError
from benchbed.metrics.registry import display_order
from benchbed.report.run_groups import Interval, RunGroup
from benchbed.report.tables import FRAMEWORK_PREFIX, TextTable

UNKNOWN = "definition not recorded by its adapter"


@dataclass(frozen=True)
class FrameworkFigures:
    """The figures table (each framework figure, then benchbed's metric of that name) and one note per figure."""

    table: TextTable
    notes: tuple[str, ...]


def _definitions(adapter: str) -> dict[str, FigureDefinition]:
    try:
        return get_adapter(adapter).figure_definitions()
    except AdapterError:
        return {}  # an adapter not installed here: its runs still compare, without definitions


def _cell(interval: Interval | None) -> str:
    return "—" if interval is None else interval.text()


def framework_figures(
    groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]], units: dict[str, str]
) -> FrameworkFigures | None:
    """None when no group has a framework figure."""
    names = sorted((n for n in aggregated if n.startswith(FRAMEWORK_PREFIX) and any(aggregated[n])),
                   key=lambda n: display_order(n.removeprefix(FRAMEWORK_PREFIX)))  # fmt: skip
    if not names:
        return None
    definitions = {g.adapter: _definitions(g.adapter) for g in groups}
    rows: list[tuple[str, ...]] = []
    notes = []
    for name in names:
        ours = name.removeprefix(FRAMEWORK_PREFIX)
        reporting = list(dict.fromkeys(g.adapter for g, iv in zip(groups, aggregated[name], strict=True) if iv))
        known = {a: definitions[a].get(name) for a in reporting}
        defined = "; ".join(f"{a}: {d.text if d else UNKNOWN}" for a, d in known.items())
        unit = units.get(name) or next((d.unit for d in known.values() if d and d.unit), "")
        rows.append((name, unit, *map(_cell, aggregated[name])))
        if ours in aggregated:
            rows.append((f"{ours} (benchbed)", units.get(ours, ""), *map(_cell, aggregated[ours])))
        if len(reporting) > 1:
            same = f"benchbed's {ours} is computed one way for every run" if ours in aggregated else ""
            notes.append(f"{name} is not the same quantity across {', '.join(reporting)}: each framework defines "
                         f"its own ({defined}){'; ' + same if same else ''}.")  # fmt: skip
        else:
            notes.append(f"{name}, {defined}.")
    header = ("figure", "unit", *(g.label for g in groups))
    return FrameworkFigures(TextTable(header, tuple(rows)), tuple(notes))
