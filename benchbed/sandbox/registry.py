"""Backend lookup by name, with errors that name the extra to install or the variables to set."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from benchbed.errors import BenchbedError
from benchbed.sandbox.base import SandboxBackend

BACKENDS = ("local", "modal", "prime")
CREDENTIALS = {
    "modal": ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"),
    "prime": ("PRIME_API_KEY",),
}
_SDK = {"modal": ("modal", "modal"), "prime": ("prime_sandboxes", "prime")}


class BackendUnavailable(BenchbedError):
    """A backend cannot be used here: unknown name, SDK not installed, or credentials missing."""


def check_sdk(name: str) -> None:
    module, extra = _SDK[name]
    if importlib.util.find_spec(module) is None:
        raise BackendUnavailable(f"the {name} backend needs the '{module}' package: pip install 'benchbed[{extra}]'")


def check_credentials(name: str, env: dict[str, str] | None = None) -> None:
    env = dict(os.environ) if env is None else env
    needed = CREDENTIALS[name]
    if name == "modal" and not all(env.get(v) for v in needed):
        config = env.get("MODAL_CONFIG_PATH") or os.path.expanduser("~/.modal.toml")
        if os.path.exists(config):
            return
    missing = [v for v in needed if not env.get(v)]
    if missing:
        raise BackendUnavailable(f"the {name} backend needs credentials: set {' and '.join(missing)}")


def get_backend(name: str, **options: Any) -> SandboxBackend:
    """Construct a backend; raise BackendUnavailable with what to install or set when it cannot run."""
    if name == "local":
        from benchbed.sandbox.local import LocalBackend

        return LocalBackend(**options)
    if name not in _SDK:
        raise BackendUnavailable(f"unknown sandbox backend {name!r}; choose one of {', '.join(BACKENDS)}")
    check_sdk(name)
    check_credentials(name)
    if name == "modal":
        from benchbed.sandbox.modal_backend import ModalBackend

        return ModalBackend(**options)
    from benchbed.sandbox.prime_backend import PrimeBackend

    return PrimeBackend(**options)
