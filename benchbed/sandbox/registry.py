"""Sandbox backends by name, registered in the `benchbed.sandbox_backends` entry-point group (local, modal and prime
are; a site adds a provider such as E2B or Daytona the same way), with errors that name the extra to install or
the variables to set."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from benchbed.errors import BenchbedError
from benchbed.registry import Registry
from benchbed.sandbox.base import SandboxBackend


class BackendUnavailable(BenchbedError):
    """A backend cannot be used here: unknown name, SDK not installed, or credentials missing."""


BACKENDS: Registry[type] = Registry(
    "benchbed.sandbox_backends", "sandbox backend", (lambda obj: isinstance(obj, type), "a class"), BackendUnavailable
)


def available_backends() -> list[str]:
    """Names registered as sandbox backends (nothing is imported)."""
    return BACKENDS.names()


def require_sdk(backend: str, module: str, extra: str) -> None:
    """Refuse with what to install when the backend's SDK `module` is missing (a backend calls it before import)."""
    if importlib.util.find_spec(module) is None:
        raise BackendUnavailable(f"the {backend} backend needs the '{module}' package: pip install 'benchbed[{extra}]'")


def require_credentials(backend: str, variables: tuple[str, ...], env: dict[str, str] | None = None) -> None:
    """Refuse, naming them, when any of the backend's credential `variables` is unset."""
    env = dict(os.environ) if env is None else env
    missing = [v for v in variables if not env.get(v)]
    if missing:
        raise BackendUnavailable(f"the {backend} backend needs credentials: set {' and '.join(missing)}")


def get_backend(name: str, **options: Any) -> SandboxBackend:
    """Construct the backend registered as `name`; BackendUnavailable with what to install or set when it cannot
    run here (each backend checks its SDK and credentials when built without an injected SDK)."""
    cls = BACKENDS.load(name)
    backend = cls(**options)
    if not isinstance(backend, SandboxBackend):
        raise BackendUnavailable(f"sandbox backend {name!r} ({cls.__qualname__}) lacks the SandboxBackend methods")
    return backend
