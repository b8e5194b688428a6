"""Tool and sandbox failures that verl only logs as warnings: counting by tool and reason, redaction (the reasons
themselves: tests/sandbox/test_reasons.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.verl.worker_logs import scan_worker_logs


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
