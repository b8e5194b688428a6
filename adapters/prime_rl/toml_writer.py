"""Rendered prime-rl configs as TOML (tomli-w: any Unicode key or value, dates, nested tables), and their key paths."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import tomli_w


def dumps(doc: dict[str, Any]) -> str:
    """TOML text for `doc`; None values are left out (prime-rl reads an absent key as its default)."""
    return tomli_w.dumps(_without_none(doc))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


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
