"""Ray worker logs: count tool/sandbox failures that verl only logs as warnings, with a normalised reason each."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.secrets import redact

# ToolAgentLoop._call_tool: logger.warning(f"Error executing tool '{name}': {e}")
_TOOL_ERROR = re.compile(r"Error executing tool '(?P<tool>[^']*)': (?P<msg>.*)")
# reward_score/sandbox_fusion/utils.py: "...Sandbox API call failed. Last error: ..."
# and "Case i: API error occurred: ..."
_SANDBOX_API = re.compile(r"(?:Sandbox API call failed\. Last error: |Case \d+: API error occurred: )(?P<msg>.*)")

# first match wins; patterns are matched case-insensitively against the provider's message
REASONS: tuple[tuple[str, str], ...] = (
    ("rate_limited", r"\b429\b|rate.?limit|too many requests|throttl"),
    ("auth", r"\b401\b|\b403\b|unauthori[sz]ed|forbidden|auth(?:entication)? (?:failed|error)|invalid token"),
    ("no_capacity", r"no (?:available )?capacity|insufficient|quota|resources? (?:exhausted|unavailable)|\b503\b"),
    ("image_error", r"image|pull|dockerfile|build failed"),
    ("oom", r"out of memory|\boom\b|memoryerror|killed"),
    (
        "start_timeout",
        r"did not (?:become ready|start)|not ready|init dead|creat\w* .*tim(?:ed|e) ?out|start(?:up)? timeout",
    ),
    ("exec_timeout", r"read timed out|timed? ?out|timeout|deadline exceeded|\b504\b"),
    ("lost", r"connection (?:refused|reset|aborted|lost)|lost|broken pipe|max retries exceeded|unreachable"),
)
_COMPILED = tuple((reason, re.compile(pattern, re.IGNORECASE)) for reason, pattern in REASONS)


def failure_reason(message: str) -> str:
    """Normalised sandbox failure reason (benchbed.keys.SANDBOX_FAILURE_REASONS) for a raw error message."""
    for reason, pattern in _COMPILED:
        if pattern.search(message):
            return reason
    return "internal"


@dataclass
class ToolFailures:
    """Counts by (source, tool, reason), with one redacted example message per reason."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def scan_worker_logs(files: list[Path]) -> ToolFailures:
    out = ToolFailures()
    for path in files:
        found = False
        with path.open("r", errors="replace") as fh:
            for line in fh:
                if "rror" not in line:
                    continue
                match = _TOOL_ERROR.search(line)
                source, tool = "tool", ""
                if match:
                    tool = match.group("tool")
                else:
                    match = _SANDBOX_API.search(line)
                    source = "sandbox_fusion"
                if not match:
                    continue
                message = match.group("msg").strip()
                reason = failure_reason(message)
                out.counts[(source, tool, reason)] += 1
                out.examples.setdefault(reason, redact(message)[:300])
                found = True
        if found:
            out.files.append(str(path))
    return out


def might_hold_failures(path: Path) -> bool:
    """Cheap filter: Ray worker logs and any log naming a tool or sandbox failure."""
    if path.name.startswith(("worker-", "python-core-worker")) and path.suffix in (".err", ".out", ".log"):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(2_000_000)
    except OSError:
        return False
    return b"Error executing tool '" in head or b"Sandbox API call failed" in head
