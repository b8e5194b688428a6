"""Coding-agent sandbox aborts in slime runs: which abort reasons stand for which sandbox failure.
Provider error text is classified by benchbed.sandbox.reasons.failure_reason."""

from __future__ import annotations

from benchbed.adapterkit.shared import failure_reason

# coding_agent_rl abort reasons (examples/coding_agent_rl/generate.py _abort_result) -> benchbed reason.
# `exception:<ExcType>` is classified from the exception name; `unevaluatable:<why>` is a dataset problem found
# before any sandbox is requested, so it is not a sandbox attempt at all.
ABORT_REASONS: dict[str, str] = {
    "missing_image_or_workdir": "image_error",
    "wall_clock_timeout": "lifetime_timeout",
    "adapter_session_empty": "internal",
}
NOT_A_SANDBOX_ABORT = "unevaluatable"


def abort_failure(reason: str) -> str | None:
    """The sandbox failure an abort reason stands for, or None when no sandbox was involved."""
    if reason.startswith(NOT_A_SANDBOX_ABORT):
        return None
    if reason in ABORT_REASONS:
        return ABORT_REASONS[reason]
    return failure_reason(reason.split(":", 1)[-1])
