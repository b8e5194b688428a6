"""The key paths of a rendered prime-rl config (written as TOML by the kit's templates.toml_text)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


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
