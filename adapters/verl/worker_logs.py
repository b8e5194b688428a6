"""Ray worker logs: count tool/sandbox failures that verl only logs as warnings, with a normalised reason each
(benchbed.sandbox.reasons, in the exec phase: both messages come from a call that runs code in a sandbox)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.shared import failure_reason, redact

# ToolAgentLoop._call_tool: logger.warning(f"Error executing tool '{name}': {e}")
_TOOL_ERROR = re.compile(r"Error executing tool '(?P<tool>[^']*)': (?P<msg>.*)")
# reward_score/sandbox_fusion/utils.py: "...Sandbox API call failed. Last error: ..."
# and "Case i: API error occurred: ..."
_SANDBOX_API = re.compile(r"(?:Sandbox API call failed\. Last error: |Case \d+: API error occurred: )(?P<msg>.*)")


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
                reason = failure_reason(message, phase="exec")
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
