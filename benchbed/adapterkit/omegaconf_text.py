"""Values for a config that OmegaConf (Hydra) reads: every string kept verbatim, never taken for an interpolation."""

from __future__ import annotations

import re
from typing import Any


def literal(value: Any) -> Any:
    """`value` (nested dicts and lists) with each string escaped as OmegaConf reads it back unchanged: `${` as
    `\\${`, and a run of backslashes before it doubled."""
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", value) if isinstance(value, str) else value
