"""prime-rl sandbox boots: which verifiers runtimes provision a sandbox, and which errors are provisioning failures.
Their messages are classified by benchbed.sandbox.reasons.failure_reason."""

from __future__ import annotations

# Runtimes whose `boot` phase provisions an isolated sandbox (a `subprocess` runtime only forks a process).
SANDBOX_RUNTIMES = frozenset({"prime", "modal", "e2b", "docker", "podman", "apptainer", "daytona"})

PROVISIONING_PREFIX = "sandbox provisioning failed"


def is_provisioning_error(error_type: str, message: str) -> bool:
    """True for a SandboxError raised while creating the box (not an exec or file I/O failure inside it)."""
    return error_type == "SandboxError" and PROVISIONING_PREFIX in message
