"""Tool and sandbox failures that verl only logs as warnings: counting and reason normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.verl.worker_logs import failure_reason, scan_worker_logs

from benchbed.keys import SANDBOX_FAILURE_REASONS


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("Sandbox creation failed: 429 Too Many Requests (rate limited)", "rate_limited"),
        ("Runtime did not start within 299s", "start_timeout"),  # uni-agent PR #47
        ("sandbox init dead after 3600s", "start_timeout"),  # case study 3 at 960 concurrent rollouts
        ("HTTPSConnectionPool(host='x', port=443): Read timed out. (read timeout=70)", "exec_timeout"),  # verl #3478
        ("401 Unauthorized: invalid token", "auth"),
        ("no capacity available in region", "no_capacity"),
        ("failed to pull image python:3.12", "image_error"),
        ("process killed: out of memory", "oom"),
        ("[Errno 111] Connection refused", "lost"),
        ("KeyError: 'stdout'", "internal"),
    ],
)
def test_failure_reason(message: str, reason: str) -> None:
    assert failure_reason(message) == reason
    assert reason in SANDBOX_FAILURE_REASONS


def test_scan_counts_by_tool_and_reason_and_redacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-secret-value-123")
    log = tmp_path / "worker-abc.err"
    log.write_text(
        "WARNING:2026-11-30 00:34:14,012:Error executing tool 'bash': 429 Too Many Requests\n"
        "WARNING:2026-11-30 00:34:15,012:Error executing tool 'bash': auth failed for as-secret-value-123\n"
        "WARNING:2026-11-30 00:34:16,012:Error executing tool 'python': 429 Too Many Requests\n"
        "INFO: all fine\n"
    )
    found = scan_worker_logs([log])
    assert dict(found.counts) == {
        ("tool", "bash", "rate_limited"): 1,
        ("tool", "bash", "auth"): 1,
        ("tool", "python", "rate_limited"): 1,
    }
    assert found.total == 3
    assert "as-secret-value-123" not in found.examples["auth"]
    assert found.files == [str(log)]
