"""Model presets as data: one TOML format and one loader for every adapter's per-model launch shapes.

A preset file holds one table per preset, in the order they are tried:

    ["qwen3-30b-a3b"]                       # the preset's name ([<adapter>].preset names it)
    source = "where the numbers come from"  # an upstream file at a commit, or "benchbed choice (why)"
    match = ['qwen3-30b-a3b']               # regular expressions searched case-insensitively in workload.model
    ...                                     # the adapter's own keys and tables (overrides, argv, layout)

The first preset (in file order) with a matching expression is the model's; `[<adapter>].preset` may name one, or
'none' for none."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tomllib

from benchbed.errors import AdapterError, SpecError

RESERVED = ("source", "match")  # the format's own keys; every other key of a preset is the adapter's


@dataclass(frozen=True)
class Preset:
    """One model preset: its name, provenance, model expressions, and the adapter's own `values`."""

    name: str
    source: str
    match: tuple[str, ...]
    values: Mapping[str, Any]

    def matches(self, model: str) -> bool:
        """Whether one of the expressions occurs in the model id (case-insensitively)."""
        return any(re.search(pattern, model, re.IGNORECASE) for pattern in self.match)


@cache
def load_presets(path: Path) -> dict[str, Preset]:
    """Every preset of the file at `path`, by name, in file order; a malformed one raises AdapterError naming the
    file, the preset's line and what was expected."""
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AdapterError(f"{path}: not valid TOML ({exc})") from None
    return {name: _preset(path, text, name, table) for name, table in data.items()}


def _preset(path: Path, text: str, name: str, table: Any) -> Preset:
    where = f"{path}:{_line_of(text, name)}"
    if not isinstance(table, dict):
        raise AdapterError(f"{where}: {name!r} should be a preset table [{name!r}], got {type(table).__name__}")
    source, match = table.get("source"), table.get("match")
    if not isinstance(source, str) or not source:
        raise AdapterError(f'{where}: preset {name!r} needs source = "<where its numbers come from>"')
    if not isinstance(match, list) or not match or not all(isinstance(m, str) for m in match):
        raise AdapterError(f"{where}: preset {name!r} needs match = [<regular expressions for workload.model>]")
    for pattern in match:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise AdapterError(
                f"{where}: preset {name!r}: match {pattern!r} is not a regular expression ({exc})"
            ) from None
    values = {key: value for key, value in table.items() if key not in RESERVED}
    return Preset(name, source, tuple(match), values)


def _line_of(text: str, name: str) -> int:
    """The 1-based line of the preset's table header (0 where it is not written as a header)."""
    header = re.compile(rf"^\[\s*(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')\s*\]", re.MULTILINE)
    found = header.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else 0


def preset_for_model(presets: Mapping[str, Preset], model: str) -> Preset | None:
    """The first preset (in file order) whose expressions match the model id, if any."""
    return next((preset for preset in presets.values() if preset.matches(model)), None)


def choose_preset(presets: Mapping[str, Preset], model: str, name: str | None, table: str) -> Preset | None:
    """The preset `[<table>].preset` names ('none': none), else the model's; an unknown name is a SpecError."""
    if name == "none":
        return None
    if name is None:
        return preset_for_model(presets, model)
    if name not in presets:
        raise SpecError(f"[{table}] preset {name!r} is unknown; presets: {', '.join(sorted(presets))}, or 'none'")
    return presets[name]
