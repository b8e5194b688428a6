"""Console-log cleaning shared by the framework parsers: ANSI colours and Ray's actor prefix and de-dup suffix."""

from __future__ import annotations

import re

# OSC (hyperlinks, window titles: ESC ] ... ended by BEL or ESC backslash) first, whole; then CSI (colours,
# cursor moves) and the two-byte escapes.
ANSI_RE = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")
_RAY_PREFIX = re.compile(r"^\((?P<actor>[A-Za-z_][\w.]*)(?: pid=(?P<pid>\d+))?(?:, ip=(?P<ip>[^)\s]+))?\)\s?")
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


def strip_ansi(text: str) -> str:
    """The text without ANSI escape sequences (colours, cursor moves, hyperlinks and titles)."""
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def split_ray_line(line: str) -> tuple[str, str, str]:
    """(actor class, pid, message) of a Ray driver line such as `(TaskRunner pid=12, ip=10.0.0.1) text`,
    with ANSI colours and Ray's `[repeated Nx across cluster]` suffix removed; '' for what is absent."""
    text = strip_ansi(line.rstrip("\r\n"))
    if text.endswith("across cluster]"):
        text = _RAY_REPEAT.sub("", text)
    match = _RAY_PREFIX.match(text)
    if match:
        return match.group("actor"), match.group("pid") or "", text[match.end() :]
    return "", "", text
