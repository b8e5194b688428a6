"""One classifier from a sandbox provider's error text to benchbed's failure reasons (SANDBOX_FAILURE_REASONS),
shared by the framework adapters (prime-rl, slime) and the Modal and Prime backends."""

from __future__ import annotations

import re

# (reason, pattern) matched case-insensitively against "<ExcType>: <message>" or a bare message; first match wins.
# Order matters: a 429 or a quota that mentions a timeout is a rate limit; an auth or billing refusal is not a
# capacity problem; a pull or OOM failure reported as "failed (...)" is not a timeout; a sandbox that ran past its
# lifetime is not a slow start. A phase that knows it was executing (not starting) maps start_timeout to
# exec_timeout itself, so no rule here yields exec_timeout.
RULES: tuple[tuple[str, str], ...] = (
    # account limits: HTTP 429, "Too Many Requests", RateLimitError, "throttled", "quota exceeded"
    ("rate_limited", r"\b429\b|rate.?limit|too many requests|throttl|quota"),
    # credentials and billing: HTTP 401/402/403, "No API key configured", PaymentRequiredError, AuthError
    (
        "auth",
        r"\b40[123]\b|unauthori[sz]ed|forbidden|\bauth(?:entication|orization)?(?:error|\b)|api.?key|credential"
        r"|payment required|insufficient (?:funds|balance|credits?)",
    ),
    # the image could not be pulled or built: IMAGE_PULL_FAILED, ErrImagePull, ImageBuildError, manifest unknown
    (
        "image_error",
        r"image.?pull|pull.?image|failed to pull|image.?build|build.?image|missing.?image|no such image"
        r"|image.{0,40}not found|not found.{0,40}image|manifest unknown|pull access denied|\bregistry\b",
    ),
    # the box was killed for memory: OOM_KILLED, OOMKilled, "out of memory", "exceeded memory limit"
    ("oom", r"\boom|out of memory|memory.?limit|memoryerror"),
    # the provider has nothing to give: HTTP 503, "no capacity in region", "insufficient resources"
    (
        "no_capacity",
        r"capacity|insufficient|no (?:available )?(?:resources|nodes|workers|gpus?)"
        r"|resources?.?(?:exhausted|unavailable)|service unavailable|\b503\b",
    ),
    # the box came up but outlived its wall-clock budget (coding_agent_rl's wall_clock_timeout)
    ("lifetime_timeout", r"wall.?clock.?timeout|lifetime|sandbox (?:has |was )?(?:expired|killed after)"),
    # the box did not become usable in time: "did not reach RUNNING", "did not become ready/reachable", TIMEOUT
    (
        "start_timeout",
        r"did not (?:reach running|become (?:ready|reachable))|not ready|gateway_reachability|timed? ?out|deadline",
    ),
    # the box or the connection to it went away: "is not running (TERMINATED)", "not found", connection reset
    (
        "lost",
        r"terminated|not running|connection (?:reset|closed|refused|lost|aborted)|disconnect|not found|\bgone\b"
        r"|\b404\b|\blost\b",
    ),
)
_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((r, re.compile(p, re.IGNORECASE)) for r, p in RULES)


def failure_reason(message: str) -> str:
    """The reason of the first rule whose pattern occurs in `message`; `internal` when none does."""
    for reason, pattern in _COMPILED:
        if pattern.search(message):
            return reason
    return "internal"
