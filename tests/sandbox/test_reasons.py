"""The one sandbox failure classifier on real provider phrasings, and every adapter and backend that classifies
giving the same reason for the same message (a bare timeout is the phase's own: verl's tool calls execute)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl.emit import _sandbox_start
from benchbed.adapters.prime_rl.model import Episode, SandboxBoot
from benchbed.adapters.slime.sandbox import abort_failure
from benchbed.adapters.verl.worker_logs import scan_worker_logs

from benchbed import keys as K
from benchbed.adapterkit.rows import EventRows
from benchbed.sandbox import modal_backend, prime_backend
from benchbed.sandbox.reasons import RULES, TIMEOUT, failure_reason

from .fakes import modal_exceptions

PRIME = "prime sandbox provisioning failed: "
T = TIMEOUT  # a timeout that names no phase: start_timeout when starting, exec_timeout when executing

TABLE: list[tuple[str, str]] = [
    # the disagreements between the two classifiers this one replaces, resolved
    ("sandbox quota exceeded", "no_capacity"),  # an account's ceiling on boxes held, not a request rate
    ("403 Forbidden: sandbox concurrency limit reached", "no_capacity"),  # a quota outranks the 403 it comes with
    ("insufficient credits for this sandbox", "auth"),  # billing: no retry helps
    ("sandbox killed after 600s", "lifetime_timeout"),  # a kill at a time budget is the lifetime
    ("Killed", "internal"),  # a bare kill names no memory, so it is not an oom
    ("HTTP 404", "lost"),  # the box is gone
    ("HTTPSConnectionPool(host='x', port=443): Read timed out. (read timeout=70)", T),  # verl #3478
    # ordering: a 429 outranks its timeout, a pull or OOM outranks theirs, "not found" is lost unless an image
    ("429 Too Many Requests: request timed out", "rate_limited"),
    ("ErrImagePull: image pull timed out", "image_error"),
    ("OOMKilled after timeout", "oom"),
    ("Sandbox sbx_1 not found", "lost"),
    ("image python:9 not found", "image_error"),
    ("insufficient resources in region", "no_capacity"),
    ("author field missing", "internal"),
    ("room 4290 is full", "internal"),
    # prime-rl / verifiers SandboxError messages (tests/adapters/prime_rl fixture generator BOOT_FAILURES)
    (PRIME + "Sandbox s did not reach RUNNING within 355s", "start_timeout"),
    (PRIME + "Sandbox s failed (TIMEOUT): exceeded", T),
    (
        PRIME + "Sandbox sbx_55e0 reached RUNNING but did not become reachable through the gateway within 60s",
        "start_timeout",
    ),
    (PRIME + "Sandbox sbx_91cc failed (IMAGE_PULL_FAILED): failed to pull image python:3.11-slim", "image_error"),
    (PRIME + "Sandbox sbx_0b12 failed (OOM_KILLED): container exceeded memory limit", "oom"),
    (PRIME + "APIError: HTTP 429 Too Many Requests: sandbox create rate limit exceeded", "rate_limited"),
    (PRIME + "PaymentRequiredError: 402 Payment Required", "auth"),
    (PRIME + "No API key configured. Set PRIME_API_KEY environment variable.", "auth"),
    (PRIME + "503 Service Unavailable: no capacity in region", "no_capacity"),
    (PRIME + "Sandbox s is not running (TERMINATED)", "lost"),
    (PRIME + "KeyError: 'id'", "internal"),
    # prime-sandboxes SDK wording
    ("UnauthorizedError: API key unauthorized. Check PRIME_API_KEY.", "auth"),
    ("APIError: HTTP 404: Sandbox sbx_9 not found", "lost"),
    ("CommandTimeoutError: Command timed out after 30s", T),
    ("HTTP 500: boom", "internal"),
    # Modal SDK wording
    ("ResourceExhaustedError: Insufficient capacity", "no_capacity"),
    ("ResourceExhaustedError: RESOURCE_EXHAUSTED: throttled", "rate_limited"),
    ("SandboxTerminatedError: Sandbox sb-123 was terminated", "lost"),
    ("SandboxTimeoutError: Sandbox has expired", "lifetime_timeout"),
    ("ImageBuildError: Image build for im-123 failed", "image_error"),
    ("AuthError: Token ID is malformed", "auth"),
    ("killed (SIGKILL): out of memory or terminated", "oom"),
    # E2B- and Daytona-like wording
    ("RateLimitError: Rate limit exceeded, please try again later.", "rate_limited"),
    ("You have reached the maximum number of concurrent E2B sandboxes (20).", "no_capacity"),
    ("TimeoutException: Sandbox creation timed out", "start_timeout"),
    ("AuthenticationException: Invalid API key", "auth"),
    ("DaytonaError: Failed to create sandbox: Total CPU quota exceeded. Maximum allowed: 10", "no_capacity"),
    ("DaytonaError: Failed to create sandbox: Forbidden", "auth"),
    # Docker daemon wording
    ("docker: Error response from daemon: pull access denied for foo, repository does not exist", "image_error"),
    ("Unable to find image 'python:9' locally", "image_error"),
    ("Error response from daemon: manifest for python:9 not found: manifest unknown", "image_error"),
    ("container exited with code 137 (OOMKilled)", "oom"),
    ("Error response from daemon: No such container: 3f2a", "lost"),
    ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", "internal"),
    # verl sandbox_fusion and tool-call messages (reward_score/sandbox_fusion/utils.py, ToolAgentLoop)
    (
        "API Request Error: HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: /run_code "
        '(Caused by NewConnectionError("Failed to establish a new connection: [Errno 111] Connection refused"))',
        "lost",
    ),
    ("API Request Error: 504 Server Error: Gateway Timeout for url: http://127.0.0.1:8080/run_code", T),
    ("API Request Error: 500 Server Error: Internal Server Error", "internal"),
    ("Sandbox creation failed: 429 Too Many Requests (rate limited)", "rate_limited"),
    ("Runtime did not start within 299s", "start_timeout"),  # uni-agent PR #47
    ("sandbox init dead after 3600s", "start_timeout"),  # case study 3 at 960 concurrent rollouts
    ("401 Unauthorized: invalid token", "auth"),
    ("process killed: out of memory", "oom"),
    ("Connection to sandbox lost", "lost"),
    ("BrokenPipeError: [Errno 32] Broken pipe", "lost"),
    ("deadline exceeded", T),
    ("KeyError: 'stdout'", "internal"),
    # slime coding_agent_rl provision failures and aborts (tests/fixtures/slime/fully_async_swe/run.log)
    ("RateLimitError: 429 Too Many Requests (token=sk-XXXX)", "rate_limited"),
    ("SandboxTimeoutError: sandbox did not become ready in 300s", "start_timeout"),
    ("SandboxTimeoutError", T),
    ("wall_clock_timeout", "lifetime_timeout"),
    ("missing_image_or_workdir", "image_error"),
    ("adapter_session_empty", "internal"),
    ("ConnectionError: Could not connect", "internal"),
]


def _verl(message: str, tmp_path: Path) -> str:
    log = tmp_path / "worker-1.err"
    log.write_text(f"WARNING:2026-11-30 01:11:52,534:Error executing tool 'bash': {message}\n")
    (reason,) = {reason for _, _, reason in scan_worker_logs([log]).counts}
    return reason


def _prime_rl(message: str, _: Path) -> str:
    rows = EventRows()
    boot = SandboxBoot(runtime="prime", t0=1.0, t1=float("nan"), ok=False, message=message)
    _sandbox_start(rows, Episode(id="e0", group="g0", window_step=1), boot, 0.0)
    (row,) = rows.rows
    return row[12]  # the status column


# every place that classifies a provider's text, with the phase its calls are in
CLASSIFIERS: dict[str, tuple[str, Callable[[str, Path], str]]] = {
    "library": ("start", lambda m, _: failure_reason(m)),
    "library-exec": ("exec", lambda m, _: failure_reason(m, phase="exec")),
    "verl": ("exec", _verl),
    "prime_rl": ("start", _prime_rl),
    "slime": ("start", lambda m, _: abort_failure(f"exception:{m}") or "not a sandbox abort"),
    "modal": ("start", lambda m, _: modal_backend.classify(RuntimeError(m), modal_exceptions())),
    "prime": ("start", lambda m, _: prime_backend.classify(RuntimeError(m))),
}


@pytest.mark.parametrize("who", sorted(CLASSIFIERS))
@pytest.mark.parametrize(("message", "reason"), TABLE)
def test_every_classifier_gives_the_tables_reason(who: str, message: str, reason: str, tmp_path: Path) -> None:
    phase, classify = CLASSIFIERS[who]
    expected = f"{phase}_timeout" if reason == T else reason
    assert classify(message, tmp_path) == expected


def test_the_table_is_large_and_reaches_every_reason() -> None:
    assert len(TABLE) >= 40
    reached = {f"{phase}_timeout" if r == T else r for _, r in TABLE for phase in ("start", "exec")}
    assert reached == set(K.SANDBOX_FAILURE_REASONS)


def test_matching_ignores_case() -> None:
    assert failure_reason("TOO MANY REQUESTS") == failure_reason("too many requests") == "rate_limited"


def test_every_rule_yields_a_known_reason_or_the_phase_timeout() -> None:
    assert {reason for reason, _ in RULES} - {TIMEOUT} <= set(K.SANDBOX_FAILURE_REASONS)
