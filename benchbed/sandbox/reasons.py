"""The one classifier from a sandbox or tool error's text to benchbed's failure reasons (SANDBOX_FAILURE_REASONS),
used by every adapter that reads such text (verl, slime, prime-rl) and by the Modal and Prime backends, so that
failure rates by reason compare across frameworks."""

from __future__ import annotations

import re
from typing import Literal

Phase = Literal["start", "exec"]

# Not a reason: the rule for a timeout that names no phase; failure_reason turns it into `<phase>_timeout`.
TIMEOUT = "timeout"

# (reason, pattern) matched case-insensitively against "<ExcType>: <message>" or a bare message; first match wins,
# so each rule sits above the rules whose words its messages also contain (a 429 that mentions a timeout is a
# rate limit, a pull that timed out is an image error, a 403 that names a quota is a quota).
RULES: tuple[tuple[str, str], ...] = (
    # requests refused for their rate, retry later: HTTP 429, "Too Many Requests", RateLimitError, "throttled"
    ("rate_limited", r"\b429\b|rate.?limit|too many requests|throttl"),
    # the account's ceiling on sandboxes held at once, retry once some close: "quota exceeded", "concurrency limit"
    (
        "no_capacity",
        r"quota|concurrency.?limit|max(?:imum)? (?:number of )?(?:concurrent|running) (?:\w+ )?sandbox",
    ),
    # credentials or billing, a retry cannot help: HTTP 401/402/403, API key, invalid token, "insufficient credits"
    (
        "auth",
        r"\b40[123]\b|unauthori[sz]ed|forbidden|\bauth(?:entication|orization)?(?:error|\b)|api.?key|credential"
        r"|invalid token|payment required|billing|insufficient (?:funds|balance|credits?)"
        r"|credits? (?:exhausted|exceeded)",
    ),
    # the image could not be pulled or built: IMAGE_PULL_FAILED, ErrImagePull, ImageBuildError, manifest unknown
    (
        "image_error",
        r"image.?pull|pull.?image|failed to pull|image.?build|build.?image|missing.?image|no such image"
        r"|unable to find image|image.{0,40}not found|not found.{0,40}image|manifest unknown|pull access denied"
        r"|\bregistry\b|dockerfile",
    ),
    # killed for memory: OOM_KILLED, OOMKilled, "out of memory", "exceeded memory limit" (a bare "killed" is not)
    ("oom", r"\boom|out of memory|memory.?limit|memoryerror"),
    # the provider's pool has nothing to give: HTTP 503, "no capacity in region", "insufficient resources"
    (
        "no_capacity",
        r"capacity|insufficient|no (?:available )?(?:resources|nodes|workers|gpus?)"
        r"|resources?.?(?:exhausted|unavailable)|service unavailable|\b503\b",
    ),
    # the box outlived its wall-clock budget: "killed after 600s", "sandbox expired", wall_clock_timeout
    (
        "lifetime_timeout",
        r"wall.?clock.?timeout|lifetime|sandbox (?:has |was )?expired|killed after \d",
    ),
    # the box did not become usable in time, in any phase: "did not reach RUNNING", "did not start", "init dead"
    (
        "start_timeout",
        r"did not (?:reach running|become (?:ready|reachable)|start)|not ready|gateway_reachability|init dead"
        r"|creat\w* .*tim(?:ed|e) ?out|start(?:up)? timeout",
    ),
    # a timeout that names no phase is the phase's own: "timed out", "deadline exceeded", HTTP 504
    (TIMEOUT, r"timed? ?out|deadline|\b504\b"),
    # the box or the way to it went away: "not running (TERMINATED)", HTTP 404, "No such container", refused
    (
        "lost",
        r"terminated|not running|connection (?:reset|closed|refused|lost|aborted)|disconnect|not found|\bgone\b"
        r"|\b404\b|\blost\b|no such container|broken pipe|max retries exceeded|unreachable",
    ),
)
_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((r, re.compile(p, re.IGNORECASE)) for r, p in RULES)


def failure_reason(message: str, phase: Phase = "start") -> str:
    """The reason of the first rule whose pattern occurs in `message`; `internal` when none does. `phase` says
    whether the failing call was starting the box or executing in it, which is what a bare timeout means."""
    for reason, pattern in _COMPILED:
        if pattern.search(message):
            return f"{phase}_timeout" if reason == TIMEOUT else reason
    return "internal"
