"""Nights marked untrusted: a night known to be wrong (a broken node, a bad driver, a held-back build) stops serving
as a baseline or as a reference band's point, while its records stay in the store unchanged.

The marks are a log in `<store>/_nightly/untrusted.jsonl`, one JSON object a line ({"night", "trusted", "reason",
"marked_at"}); the last line about a night decides, so a mark is undone by a later line, never by an edit."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from benchbed.errors import StoreError
from benchbed.outputs import write_output

MARKS_PATH = Path("_nightly") / "untrusted.jsonl"


@dataclass(frozen=True)
class TrustMark:
    """One line of the marks log: a night marked untrusted (or trusted again), why and when."""

    night: str
    trusted: bool
    reason: str
    marked_at: str

    def to_json(self) -> dict[str, object]:
        return {"night": self.night, "trusted": self.trusted, "reason": self.reason, "marked_at": self.marked_at}


def read_marks(store_root: Path) -> list[TrustMark]:
    """Every line of the store's marks log, oldest first; a line that is not a mark is a StoreError naming it."""
    path = Path(store_root) / MARKS_PATH
    if not path.exists():
        return []
    marks = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            marks.append(TrustMark(str(data["night"]), bool(data["trusted"]), str(data["reason"]),
                                   str(data["marked_at"])))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            raise StoreError(
                f"{path}:{number}: expected a JSON object with night, trusted, reason and marked_at; fix or "
                "remove the line (benchbed writes this file with `benchbed untrust`)"
            ) from None
    return marks


def untrusted_nights(store_root: Path) -> dict[str, str]:
    """The nights whose last mark says untrusted, each with its reason."""
    last = {mark.night: mark for mark in read_marks(store_root)}
    return {night: mark.reason for night, mark in last.items() if not mark.trusted}


def mark_night(store_root: Path, night: str, reason: str, trusted: bool = False) -> TrustMark:
    """Append a mark to the log (the whole log rewritten atomically: a crash leaves the old one or the new one)."""
    read_marks(store_root)  # a damaged log is reported, not extended
    path = Path(store_root) / MARKS_PATH
    mark = TrustMark(night, trusted, reason, dt.datetime.now(dt.timezone.utc).isoformat())
    old = path.read_bytes() if path.exists() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output(path, old + (json.dumps(mark.to_json()) + "\n").encode("utf-8"))
    return mark
