"""The adapter contract: render a spec into a LaunchPlan, parse a run's artifacts into a Trace; plus the registry."""

from __future__ import annotations

import difflib
import threading
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from benchbed.errors import AdapterError

if TYPE_CHECKING:
    from benchbed.spec import ExperimentSpec
    from benchbed.trace import Trace

ENTRY_POINT_GROUP = "benchbed.adapters"


class LaunchPlan(BaseModel):
    """Everything needed to start a run as a user would type it: argv, environment, files, working dir."""

    model_config = ConfigDict(extra="forbid")

    argv: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict, description="added to the caller's environment")
    cwd: str | None = Field(None, description="working directory; None = the run directory")
    files: dict[str, str] = Field(
        default_factory=dict, description="run-dir-relative path -> text written before launch (configs)"
    )
    timeout_s: float | None = Field(None, gt=0)
    captures: dict[str, list[str]] = Field(
        default_factory=dict,
        description="run-dir-relative file -> command whose stdout records the environment before launch "
        "(e.g. pip freeze), so parse can detect the framework version",
    )
    submits_job: Literal["slurm"] | None = Field(
        None, description="the command submits its own scheduler job (prime-rl multi-node: `rl` runs sbatch)"
    )
    description: str = ""


@runtime_checkable
class Adapter(Protocol):
    """A framework integration. `render` and `parse` are pure: no framework import, no network."""

    name: str

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        """The command that runs `spec` with its artifacts written under `run_dir`."""
        ...

    def parse(self, path: Path) -> Trace:
        """Read a run directory (or a single native file) into the canonical trace.

        Raises NotThisFrameworkError when the input was written by another framework."""
        ...


_lock = threading.Lock()
_loaded: dict[str, Adapter] = {}


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def available_adapters() -> list[str]:
    """Names registered in the entry-point group (nothing is imported)."""
    return sorted(_entry_points())


def get_adapter(name: str) -> Adapter:
    """Load an adapter by name, lazily; unknown names get a 'did you mean'."""
    with _lock:
        if name in _loaded:
            return _loaded[name]
        eps = _entry_points()
        if name not in eps:
            close = difflib.get_close_matches(name, list(eps), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise AdapterError(f"unknown adapter {name!r}{hint} (available: {', '.join(sorted(eps)) or 'none'})")
        try:
            factory = eps[name].load()
        except ImportError as exc:
            raise AdapterError(f"adapter {name!r} cannot be loaded: {exc}") from exc
        adapter = factory()
        if not isinstance(adapter, Adapter):
            raise AdapterError(f"entry point {name!r} does not provide render() and parse()")
        _loaded[name] = adapter
        return adapter
