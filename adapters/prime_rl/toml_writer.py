"""A small TOML writer for rendered configs: nested tables, arrays of tables, scalars and scalar arrays."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any


def dumps(doc: dict[str, Any]) -> str:
    """TOML text for `doc`; None values are left out (prime-rl reads an absent key as its default)."""
    lines: list[str] = []
    _table(doc, [], lines, header=None)
    return "\n".join(lines).strip() + "\n"


def _key(part: str) -> str:
    return part if part.replace("_", "").replace("-", "").isalnum() else json.dumps(part)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write non-finite float {value} to TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(doc: dict[str, Any], path: list[str], lines: list[str], header: str | None) -> None:
    scalars = [(k, v) for k, v in doc.items() if v is not None and not isinstance(v, dict) and not _is_table_array(v)]
    tables = [(k, v) for k, v in doc.items() if isinstance(v, dict)]
    arrays = [(k, v) for k, v in doc.items() if _is_table_array(v)]
    if header is not None:
        if lines:
            lines.append("")
        lines.append(header)
    for k, v in scalars:
        lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in tables:
        sub = [*path, k]
        if _has_scalars(v) or not v:
            _table(v, sub, lines, header=f"[{'.'.join(_key(p) for p in sub)}]")
        else:
            _table(v, sub, lines, header=None)
    for k, items in arrays:
        sub = [*path, k]
        for item in items:
            _table(item, sub, lines, header=f"[[{'.'.join(_key(p) for p in sub)}]]")


def _has_scalars(doc: dict[str, Any]) -> bool:
    return any(v is not None and not isinstance(v, dict) and not _is_table_array(v) for v in doc.values())


def flatten(doc: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Dotted key paths of every value (array-of-table items share their array's path; empty tables count)."""
    for k, v in doc.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            if not v:
                yield path
            yield from flatten(v, f"{path}.")
        elif _is_table_array(v):
            for item in v:
                yield from flatten(item, f"{path}.")
        elif v is not None:
            yield path
