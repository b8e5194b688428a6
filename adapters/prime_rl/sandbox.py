"""Map sandbox provisioning error messages (verifiers runtimes, prime-sandboxes SDK) to benchbed's failure reasons."""

from __future__ import annotations

import re

# Runtimes whose `boot` phase provisions an isolated sandbox (a `subprocess` runtime only forks a process).
SANDBOX_RUNTIMES = frozenset({"prime", "modal", "e2b", "docker", "podman", "apptainer", "daytona"})

# First match wins; order matters (a 429 that mentions a timeout is a rate limit).
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rate_limited", re.compile(r"\b429\b|rate.?limit|too many requests|throttl", re.I)),
    ("auth", re.compile(r"\b40[123]\b|unauthori[sz]ed|forbidden|no api key|invalid api key|payment required", re.I)),
    (
        "image_error",
        re.compile(r"IMAGE_PULL|image pull|imagepull|image build|manifest unknown|pull access denied", re.I),
    ),
    ("oom", re.compile(r"OOM_KILLED|\bOOM\b|out of memory", re.I)),
    ("no_capacity", re.compile(r"capacity|insufficient|no available|quota|resource.?exhausted|\b503\b", re.I)),
    (
        "start_timeout",
        re.compile(r"did not reach RUNNING|did not become reachable|GATEWAY_REACHABILITY|TIMEOUT|timed? ?out", re.I),
    ),
    ("lost", re.compile(r"terminated|not running|connection (reset|closed|refused)|disconnect", re.I)),
)

PROVISIONING_PREFIX = "sandbox provisioning failed"


def failure_reason(message: str) -> str:
    """Normalized reason for a failed sandbox start; `internal` when nothing more specific is recognizable."""
    for reason, pattern in RULES:
        if pattern.search(message):
            return reason
    return "internal"


def is_provisioning_error(error_type: str, message: str) -> bool:
    """True for a SandboxError raised while creating the box (not an exec or file I/O failure inside it)."""
    return error_type == "SandboxError" and PROVISIONING_PREFIX in message
