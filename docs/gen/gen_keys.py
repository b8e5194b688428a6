"""The trace vocabulary and the adapters' key maps, rendered from benchbed/keys.py and each adapter's keymap.toml."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gen_common import cell, code


def trace_keys_markdown(keys: Mapping[str, str], prefixes: Sequence[str]) -> str:
    """Every canonical key with its one-line definition, then the prefixes of framework aggregates."""
    rows = [f"| `{key}` | {cell(text)} |" for key, text in keys.items()]
    kept = ", ".join(f"`{p}*`" for p in prefixes)
    return "\n".join(["| key | meaning |", "|---|---|", *rows, "", f"Framework aggregates may also use {kept}.", ""])


def vocabulary_markdown(values: Sequence[str]) -> str:
    """A closed vocabulary as an inline list."""
    return ", ".join(f"`{v}`" for v in values)


def _releases(entry: Any, releases: Sequence[str]) -> str:
    first, last = entry.first or releases[0], entry.last or releases[-1]
    return first if first == last else f"{first} – {last}"


def _role(entry: Any) -> str:
    """The role with the relations the entry carries as data (`within`, `step_offset`, `process`, `rate_timer`)."""
    where = {"after_step": "after the step", "beside": "beside the trainer"}
    parts = [entry.role]
    if entry.within != "step":
        parts.append(where.get(entry.within, f"within {code(entry.within)}"))
    if entry.step_offset:
        parts.append("in the next step")
    if entry.process:
        parts.append(f"{entry.process} process")
    if entry.rate_timer:
        parts.append(f"rate over {code(entry.rate_timer)}")
    return ", ".join(parts)


def keymap_markdown(keymap: Any) -> str:
    """One adapter's key map: its releases with their descriptions, every entry, then the console lines it reads."""
    out = [f"Releases (oldest first): {', '.join(f'`{r}`' for r in keymap.releases)}.", ""]
    described = [(r, keymap.facts(r).get("description")) for r in keymap.releases]
    out += [f"- `{r}`: {cell(text)}" for r, text in described if text]
    if any(text for _, text in described):
        out.append("")
    show_modes = any(e.modes for e in keymap.entries)
    head = "| native key | canonical | unit | role | releases |" + (" modes |" if show_modes else "") + " note |"
    out += [head, "|" + "---|" * (head.count("|") - 1)]
    for e in keymap.entries:
        canonical = f"`{e.canonical}`" if e.canonical else "—"
        modes = f" {', '.join(e.modes) or 'all'} |" if show_modes else ""
        out.append(
            f"| {code(e.native)} | {canonical} | {cell(e.unit) or '—'} | {_role(e)} "
            f"| {_releases(e, keymap.releases)} |{modes} {cell(e.note)} |"
        )
    if keymap.lines:
        out += ["", "Console lines it reads (`[lines]`, Python regular expressions):", ""]
        out += ["| name | pattern |", "|---|---|"]
        out += [f"| `{name}` | {code(p.pattern)} |" for name, p in keymap.lines.items()]
    out.append("")
    return "\n".join(out)
