"""Line readers shared by the prime-rl parsers: JSONL with per-line warnings, text logs without ANSI colours."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchbed.logtext import strip_ansi


class NonFinite(ValueError):
    """A JSON line carried NaN or ±Infinity (prime-rl's file monitor drops these; a hand-edited file may not)."""


def _reject_constant(name: str) -> float:
    raise NonFinite(name)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


def read_jsonl(path: Path, warnings: list[str], check_finite: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for each JSON object line; bad lines become warnings naming the line.

    A last line that does not parse is reported as truncated (the writer died mid-line); a non-finite number
    (NaN, Infinity, or a float overflowing to inf) skips the whole row."""
    with path.open("rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    last = len(lines)
    while last > 0 and not lines[last - 1].strip():
        last -= 1
    for i in range(last):
        raw = lines[i]
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            obj = json.loads(raw, parse_constant=_reject_constant)
        except NonFinite as exc:
            warnings.append(f"{path}:{lineno}: skipped row with non-finite value {exc}")
            continue
        except (ValueError, UnicodeDecodeError) as exc:
            if lineno == last and not data.endswith(b"\n"):
                warnings.append(
                    f"{path}:{lineno}: skipped truncated last line ({len(raw)} bytes, {exc.__class__.__name__})"
                )
            else:
                warnings.append(f"{path}:{lineno}: skipped line that is not JSON ({exc})")
            continue
        if not isinstance(obj, dict):
            warnings.append(f"{path}:{lineno}: skipped line that is not a JSON object")
            continue
        if check_finite and _has_non_finite(obj):
            warnings.append(f"{path}:{lineno}: skipped row with a non-finite value")
            continue
        yield lineno, obj


def read_text_lines(path: Path) -> list[str]:
    """Lines of a text log with ANSI colours removed (undecodable bytes replaced)."""
    return [strip_ansi(line) for line in path.read_text(errors="replace").splitlines()]
