"""Tolerant line reading for adapters: JSON Lines and text logs, every skipped line named by file and line number."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from benchbed import progress
from benchbed.errors import TraceError
from benchbed.logtext import strip_ansi


class NonFinite(ValueError):
    """A JSON line carried NaN or ±Infinity where the reader asked for finite numbers only."""


def _reject_constant(name: str) -> float:
    raise NonFinite(name)


def loads_stdlib(raw: bytes, **options: Any) -> Any:
    """The standard library's JSON parser, its RecursionError on a value nested too deep turned into the ValueError
    every line reader reports as a line that is not JSON (the parser recurses once per level; orjson stops at 1024)."""
    try:
        return json.loads(raw, **options)
    except RecursionError:
        raise ValueError("nested deeper than the JSON parser reads") from None


def loads_finite(raw: bytes) -> Any:
    """JSON that refuses NaN and ±Infinity (NonFinite names the constant); numbers overflowing to inf pass."""
    return loads_stdlib(raw, parse_constant=_reject_constant)


def loads_lenient(raw: bytes) -> Any:
    """orjson, falling back to the standard library for NaN and ±Infinity as Python's json.dumps writes them."""
    try:
        return orjson.loads(raw)
    except ValueError:
        return loads_stdlib(raw)


def has_non_finite(value: Any) -> bool:
    """Whether a parsed JSON value holds a NaN or infinite float anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    return False


class JsonLines:
    """(line number, object) for every JSON-object line of a file; each other line becomes one warning `FILE:N: ...`.

    A last line with no closing newline that does not parse is the writer dying mid-line: it is skipped and
    `truncated` is set. `finite=True` also skips rows holding a non-finite number."""

    def __init__(
        self,
        path: Path,
        warnings: list[str],
        loads: Callable[[bytes], Any] = orjson.loads,
        finite: bool = False,
    ) -> None:
        self.path = path
        self.warnings = warnings
        self.loads = loads
        self.finite = finite
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        loads, warn, finite, path = self.loads, self.warnings.append, self.finite, self.path
        report, label = progress.listener(), f"reading {path.name}"
        with path.open("rb") as fh:
            total, reported = (os.fstat(fh.fileno()).st_size, 0) if report else (0, 0)
            for number, raw in enumerate(iter(lambda: fh.readline(LINE_LIMIT), b""), 1):
                if report and (done := fh.tell()) - reported >= progress.EVERY:
                    report(label, done, total)
                    reported = done
                if len(raw) == LINE_LIMIT and not raw.endswith(b"\n"):
                    length = len(raw) + skip_line(fh)
                    warn(f"{path}:{number}: skipped line of {length:,} bytes (longer than {LINE_LIMIT:,}: no JSON row)")
                    continue
                try:
                    obj = loads(raw)
                except NonFinite as exc:
                    warn(f"{path}:{number}: skipped row with non-finite value {exc}")
                    continue
                except (ValueError, UnicodeDecodeError) as exc:
                    if raw.isspace():
                        continue
                    if not raw.endswith(b"\n"):  # only the last line can lack its newline
                        self.truncated = True
                        warn(
                            f"{path}:{number}: skipped truncated last line ({len(raw)} bytes, no closing newline: "
                            "the line is cut off, the writer stopped mid-line)"
                        )
                    else:
                        warn(f"{path}:{number}: skipped line that is not JSON ({exc.__class__.__name__}: {exc})")
                    continue
                if obj.__class__ is not dict:
                    warn(f"{path}:{number}: skipped line that is not a JSON object")
                    continue
                if finite and has_non_finite(obj):
                    warn(f"{path}:{number}: skipped row with a non-finite value")
                    continue
                yield number, obj
            if report:
                report(label, total, total)


WHOLE_FILE_LIMIT = 512 << 20  # bytes: a config or state file a framework writes whole is far smaller
LINE_LIMIT = 64 << 20  # bytes: a JSON line longer than this is no metrics row (a sparse or foreign file)


def read_utf8(path: Path, limit: int = WHOLE_FILE_LIMIT) -> str:
    """A file's text; TraceError `FILE:LINE: not UTF-8 text (…)` naming the first byte that is not, where a
    framework's JSON or YAML file (always UTF-8) holds something else, and `FILE: N bytes` for a file larger than
    `limit`, before any of it is read."""
    size = path.stat().st_size
    if size > limit:
        raise TraceError(f"{path}: {size:,} bytes, larger than such a file can be (at most {limit:,} read whole)")
    data = path.read_bytes()
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        what = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
        raise TraceError(f"{path}:{line}: not UTF-8 text ({what}); expected the UTF-8 its framework writes") from None


def skip_line(fh: Any) -> int:
    """Read past the rest of the current line a chunk at a time (a 2 GiB line is never held); the bytes skipped."""
    skipped = 0
    while chunk := fh.readline(1 << 20):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


def text_lines(path: Path) -> list[str]:
    """Lines of a text log with ANSI colours removed (undecodable bytes replaced)."""
    return [strip_ansi(line) for line in path.read_text(errors="replace").splitlines()]


def first_content_line(path: Path, limit: int = 65536) -> bytes:
    """The first non-blank line (at most `limit` bytes read), b'' if there is none."""
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw[:limit]
            limit -= len(raw)
            if limit <= 0:
                break
    return b""


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first non-blank line parsed as a JSON object (NaN and ±Infinity allowed), None if it is not one: how an
    adapter tells its own JSON files from others' by their first record."""
    try:
        obj = loads_lenient(first_content_line(path))
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def head_bytes(path: Path, size: int = 200_000) -> bytes:
    """The first `size` bytes of a file (b'' when it cannot be read), for cheap content sniffing."""
    try:
        with path.open("rb") as fh:
            return fh.read(size)
    except OSError:
        return b""
