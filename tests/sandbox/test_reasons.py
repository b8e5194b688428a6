"""The shared sandbox failure classifier on real provider phrasings (prime-rl and slime fixtures, SDK wording)."""

from __future__ import annotations

import pytest

from benchbed import keys as K
from benchbed.sandbox.reasons import RULES, failure_reason

PRIME = "prime sandbox provisioning failed: "


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # prime-rl SandboxError messages (tests/adapters/prime_rl, fixture generator BOOT_FAILURES)
        (PRIME + "Sandbox s did not reach RUNNING within 355s", "start_timeout"),
        (PRIME + "Sandbox s failed (TIMEOUT): exceeded", "start_timeout"),
        (PRIME + "Sandbox sbx_55e0 reached RUNNING but did not become reachable through the gateway within 60s",
         "start_timeout"),
        (PRIME + "Sandbox s failed (IMAGE_PULL_FAILED): x", "image_error"),
        (PRIME + "Sandbox sbx_91cc failed (IMAGE_PULL_FAILED): failed to pull image python:3.11-slim", "image_error"),
        (PRIME + "Sandbox s failed (OOM_KILLED): x", "oom"),
        (PRIME + "Sandbox sbx_0b12 failed (OOM_KILLED): container exceeded memory limit", "oom"),
        (PRIME + "429 Too Many Requests", "rate_limited"),
        (PRIME + "APIError: HTTP 429 Too Many Requests: sandbox create rate limit exceeded", "rate_limited"),
        (PRIME + "PaymentRequiredError: 402 Payment Required", "auth"),
        (PRIME + "No API key configured. Set PRIME_API_KEY environment variable.", "auth"),
        (PRIME + "503 Service Unavailable: no capacity in region", "no_capacity"),
        (PRIME + "Sandbox s is not running (TERMINATED)", "lost"),
        (PRIME + "KeyError: 'id'", "internal"),
        # slime coding_agent_rl provision failures and aborts (tests/fixtures/slime/fully_async_swe/run.log)
        ("RateLimitError: 429 Too Many Requests (token=sk-XXXX)", "rate_limited"),
        ("SandboxTimeoutError: sandbox did not become ready in 300s", "start_timeout"),
        ("SandboxTimeoutError", "start_timeout"),
        ("wall_clock_timeout", "lifetime_timeout"),
        ("missing_image_or_workdir", "image_error"),
        ("adapter_session_empty", "internal"),
        # SDK wording seen by the Modal and Prime backends
        ("ResourceExhaustedError: Insufficient capacity", "no_capacity"),
        ("ResourceExhaustedError: RESOURCE_EXHAUSTED: throttled", "rate_limited"),
        ("UnauthorizedError: API key unauthorized. Check PRIME_API_KEY.", "auth"),
        ("HTTP 503: busy", "no_capacity"),
        ("HTTP 500: boom", "internal"),
        ("ConnectionError: Could not connect", "internal"),
    ],
)  # fmt: skip
def test_failure_reason(message: str, reason: str) -> None:
    assert failure_reason(message) == reason


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # rate limit outranks the timeout it mentions; billing is auth, not capacity; a quota is an account limit
        ("429 Too Many Requests: request timed out", "rate_limited"),
        ("sandbox quota exceeded", "rate_limited"),
        ("insufficient credits for this sandbox", "auth"),
        ("insufficient resources in region", "no_capacity"),
        # a pull failure or an OOM reported with a timeout is still what failed; a lifetime kill is not a slow start
        ("ErrImagePull: image pull timed out", "image_error"),
        ("OOMKilled after timeout", "oom"),
        ("sandbox was killed after 3600s", "lifetime_timeout"),
        # "not found" is a lost box unless it is the image that was not found
        ("Sandbox sbx_1 not found", "lost"),
        ("image python:9 not found", "image_error"),
        # words that only look like a reason
        ("author field missing", "internal"),
        ("room 4290 is full", "internal"),
    ],
)
def test_first_match_wins_in_rule_order(message: str, reason: str) -> None:
    assert failure_reason(message) == reason


def test_matching_ignores_case() -> None:
    assert failure_reason("TOO MANY REQUESTS") == failure_reason("too many requests") == "rate_limited"


def test_every_rule_yields_a_known_reason() -> None:
    assert {reason for reason, _ in RULES} <= set(K.SANDBOX_FAILURE_REASONS)


def test_one_rule_per_reason() -> None:
    reasons = [reason for reason, _ in RULES]
    assert len(reasons) == len(set(reasons))
