"""Snapshots of upstream facts (the keys, fields and options a framework accepts at a pinned commit), so rendered
names can be checked offline: one format, one file per adapter (`upstream.json`), refreshed and checked by
tools/upstream.py.

    {
     "format": "benchbed upstream snapshot 1",
     "lists": {
      "<list name>": {
       "source": "<repository>@<commit>: <what was read>",
       "names": ["<sorted, unique names>", ...]
      }
     }
    }

An adapter looks its lists up by name (`keys`, `prime-rl 559b447`, `slime v0.3.1`, ...); a name ending in `.*` is
an open subtree (any key below it is accepted)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from benchbed.errors import AdapterError

FORMAT = "benchbed upstream snapshot 1"
SNAPSHOT_FILE = "upstream.json"
OPEN = ".*"  # a name ending so accepts any key below it


@dataclass(frozen=True)
class NameList:
    """One list of upstream names and where it was read (repository, commit, file)."""

    source: str
    names: tuple[str, ...]

    def accepts(self, key: str) -> bool:
        """Whether `key` is one of the names, or lies below an open one (`path.*`)."""
        return key in self.names or any(n.endswith(OPEN) and key.startswith(n[: -len(OPEN)] + ".") for n in self.names)

    def unknown(self, keys: list[str]) -> list[str]:
        """The keys this list does not accept, in order."""
        return [key for key in keys if not self.accepts(key)]


@cache
def load_snapshot(path: Path) -> dict[str, NameList]:
    """The named lists of the snapshot at `path`; a malformed one raises AdapterError naming the file and what was
    expected (and the list, where one is at fault)."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise AdapterError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("lists"), dict):
        raise AdapterError(f'{path}: expected {{"format": "{FORMAT}", "lists": {{...}}}}')
    return {name: _name_list(path, name, entry) for name, entry in doc["lists"].items()}


def _name_list(path: Path, name: str, entry: Any) -> NameList:
    if not isinstance(entry, dict) or set(entry) != {"source", "names"}:
        raise AdapterError(f"{path}: list {name!r} should hold exactly `source` and `names`")
    source, names = entry["source"], entry["names"]
    if not isinstance(source, str) or "@" not in source:
        raise AdapterError(f"{path}: list {name!r}: source should read '<repository>@<commit>: <what was read>'")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or names != sorted(set(names)):
        raise AdapterError(f"{path}: list {name!r}: names should be strings, sorted, each once")
    return NameList(source, tuple(names))


def snapshot_text(lists: dict[str, NameList]) -> str:
    """The snapshot file's text for `lists`: the one layout every snapshot is written in (one name a line)."""
    doc = {"format": FORMAT, "lists": {n: {"source": v.source, "names": list(v.names)} for n, v in lists.items()}}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def upstream_list(adapter_dir: Path, name: str) -> NameList:
    """The list `name` of the adapter's snapshot (`adapter_dir`/upstream.json); AdapterError where it has none."""
    path = adapter_dir / SNAPSHOT_FILE
    lists = load_snapshot(path)
    if name not in lists:
        raise AdapterError(f"{path}: no list {name!r} (lists: {', '.join(lists)}); refresh it with tools/upstream.py")
    return lists[name]
