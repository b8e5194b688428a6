"""What the site reads from the installed benchbed: the registered adapters, their spec tables and key maps, and
the README that becomes the site's front page."""

from __future__ import annotations

import importlib
import posixpath
import re
from pathlib import Path
from typing import Any

from gen_common import DocsError, cell

ROOT = Path(__file__).resolve().parents[2]


def adapters() -> list[tuple[str, str, Any]]:
    """(adapter name, its spec table, its options model or None) for every registered adapter, by name."""
    from benchbed.adapter import available_adapters, get_adapter

    out = []
    for name in available_adapters():
        adapter = get_adapter(name)
        out.append((name, adapter.table, adapter.options_model))
    return out


def launcher_tables() -> dict[str, Any]:
    """Launcher name (its spec table) -> its options model, for every registered launcher that takes options."""
    from benchbed.launch.base import LAUNCHERS

    found = {name: LAUNCHERS.load(name).options_model for name in LAUNCHERS.names()}
    return {name: model for name, model in found.items() if model is not None}


def keymap_of(name: str) -> Any:
    """The adapter's key map (the keymap.toml beside its package), or None when it has none."""
    from benchbed.adapter import get_adapter
    from benchbed.adapterkit.keymaps import load_keymap

    module = importlib.import_module(type(get_adapter(name)).__module__)
    path = Path(module.__file__).parent / "keymap.toml"
    return load_keymap(path) if path.exists() else None


def _summary(name: str) -> str:
    from benchbed.adapter import get_adapter

    doc = type(get_adapter(name)).__doc__ or ""
    return doc.strip().split("\n\n")[0]


def adapter_pages(page_path: str) -> str:
    """A table of the registered adapters, each linked to its page under frameworks/."""
    here = posixpath.dirname(page_path)
    rows = ["| adapter | spec table | what it is |", "|---|---|---|"]
    for name, table, _ in adapters():
        link = posixpath.relpath(f"frameworks/{name}.md", here or ".")
        rows.append(f"| [`{name}`]({link}) | `[{table}]` | {cell(_summary(name))} |")
    return "\n".join([*rows, ""])


def plugins_markdown(group: str) -> str:
    """The entry points registered in a plug-in group (`benchbed.launchers`, ...), as a table of name and class."""
    from importlib import metadata

    rows = sorted((ep.name, ep.value) for ep in metadata.entry_points(group=group))
    if not rows:
        raise DocsError(f"no entry points registered in {group!r}")
    return "\n".join(["| name | class |", "|---|---|", *(f"| `{name}` | `{value}` |" for name, value in rows), ""])


def readme_markdown() -> str:
    """README.md as the site's front page: its title left out (the page has one), links into docs/ made relative
    to the site's root."""
    text = (ROOT / "README.md").read_text()
    text = re.sub(r"\A# [^\n]*\n", "", text)
    return re.sub(r"\]\(docs/", "](", text)
