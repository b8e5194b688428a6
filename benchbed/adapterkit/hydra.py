"""Hydra override text (`key=value` on a command line) that Hydra's override parser and OmegaConf read back as the
very value written: the one writer for every adapter whose framework takes Hydra overrides (verl, NeMo-RL, SkyRL).

The grammar is Hydra 1.3's (hydra/grammar/OverrideParser.g4 in facebookresearch/hydra at v1.3.2): a bare word is a
string only when it does not parse as a number, a bool or null, and OmegaConf resolves `${...}` in any string."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from benchbed.errors import SpecError

# Written bare only when Hydra reads it back as this very string: ASCII, not starting like a number, and not a
# word Hydra or a YAML reader takes for a bool, null or float; everything else is quoted.
_PLAIN = re.compile(r"^(?!\.[0-9])[A-Za-z_/.][A-Za-z0-9_./:@+~-]*$")  # `.5` is a float to Hydra
_WORDS = {"true", "false", "null", "nan", "inf", "yes", "no", "on", "off", "y", "n", "none", ".inf", ".nan"}
_DICT_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")  # what a Hydra dict key may be, unquoted (it cannot be quoted)


def hydra_value(value: Any, where: str = "overrides") -> str:
    """A Python value as Hydra override syntax that Hydra and OmegaConf read back as the same value: true/false,
    null, numbers, [a,b], {k:v}, strings quoted when needed (a date, a time or a path becomes its text). `where`
    names the table in the SpecError for a value Hydra cannot carry."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v, where) for v in value) + "]"
    if isinstance(value, Mapping):
        bad = [k for k in value if not _DICT_KEY.match(str(k))]
        if bad:
            raise SpecError(f"{where}: table key {bad[0]!r} cannot be written as a Hydra dict key "
                            "(letters, digits, '_', '-' and '$', not starting with a digit)")  # fmt: skip
        return "{" + ",".join(f"{k}:{hydra_value(v, where)}" for k, v in value.items()) + "}"
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    if _PLAIN.match(text) and text.lower() not in _WORDS:
        return text
    if text == "???":
        raise SpecError(f"{where}: '???' is OmegaConf's missing-value marker; it cannot be passed as text")
    return quoted(text)


def hydra_overrides(values: Mapping[str, Any], where: str = "overrides") -> list[str]:
    """`key=value` arguments for a mapping of dotted keys to values, in its order, each value by `hydra_value`."""
    return [f"{key}={hydra_value(value, where)}" for key, value in values.items()]


def quoted(text: str) -> str:
    """A single-quoted Hydra string: a run of backslashes before `${` doubles and the `$` is escaped (OmegaConf
    reads `\\${` as text, not an interpolation); a run before a quote, or at the end, doubles (Hydra's rule)."""
    text = re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 2 + "\\${", text)
    text = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", text)
    text = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, text)
    return f"'{text}'"
