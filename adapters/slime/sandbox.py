"""Coding-agent sandbox events in slime runs: failure reasons normalised to benchbed's vocabulary."""

from __future__ import annotations

import re

# (pattern over "<ExcType>: <message>" or an abort reason, benchbed reason); first match wins.
FAILURE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), reason)
    for p, reason in (
        (r"rate.?limit|too many requests|\b429\b|quota", "rate_limited"),
        (r"unauthori[sz]ed|forbidden|\b40[13]\b|auth|api.?key|credential", "auth"),
        (r"missing_image|image|manifest unknown|pull access denied|not found: .*image|registry", "image_error"),
        (r"capacity|no (available )?(resources|nodes|workers)|insufficient|unavailable|\b503\b", "no_capacity"),
        (r"out of memory|\boom\b|memory", "oom"),
        (r"wall_clock_timeout|lifetime|sandbox.*(expired|killed after)", "lifetime_timeout"),
        (r"timeout|timed out|deadline", "start_timeout"),
        (r"connection (reset|refused|closed)|disconnect|not found|gone|\b404\b|lost", "lost"),
    )
)
# coding_agent_rl abort reasons (examples/coding_agent_rl/generate.py _abort_result) -> benchbed reason.
# `exception:<ExcType>` is classified from the exception name; `unevaluatable:<why>` is a dataset problem found
# before any sandbox is requested, so it is not a sandbox attempt at all.
ABORT_REASONS: dict[str, str] = {
    "missing_image_or_workdir": "image_error",
    "wall_clock_timeout": "lifetime_timeout",
    "adapter_session_empty": "internal",
}
NOT_A_SANDBOX_ABORT = "unevaluatable"


def failure_reason(text: str) -> str:
    """Map a provider error or abort reason to one of benchbed's SANDBOX_FAILURE_REASONS (default: internal)."""
    for pattern, reason in FAILURE_PATTERNS:
        if pattern.search(text):
            return reason
    return "internal"


def abort_failure(reason: str) -> str | None:
    """The sandbox failure an abort reason stands for, or None when no sandbox was involved."""
    if reason.startswith(NOT_A_SANDBOX_ABORT):
        return None
    if reason in ABORT_REASONS:
        return ABORT_REASONS[reason]
    return failure_reason(reason.split(":", 1)[-1])
