"""The adapter contract: render a spec into a LaunchPlan, parse a run's artifacts into a Trace; plus the registry."""

from __future__ import annotations

import difflib
import functools
import sys
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
    """A framework integration. `render` and `parse` are pure: no framework import, no network.

    Optional class attributes: `options_model`, a pydantic model (extra="forbid") that validates the spec's
    table of this adapter when the spec is loaded; `spec_table`, that table's name when it is not `name`.
    `benchbed.adapterkit.adapter.FrameworkAdapter` implements this (and `find_runs`) from declared functions."""

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
    return _entry_points_on(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _entry_points_on(path: tuple[str, ...]) -> dict[str, metadata.EntryPoint]:
    """The group's entry points for this sys.path: scanning every installed distribution takes ~0.1 s, and
    loading a spec asks several times; a package added to sys.path is seen on the next call."""
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


def options_model(adapter: Adapter) -> type[BaseModel] | None:
    """The pydantic model that validates the adapter's spec table, if it declares one."""
    return getattr(adapter, "options_model", None)


def spec_table(adapter: Adapter) -> str:
    """The name of the adapter's table in a spec: `spec_table` when declared, else the adapter's name."""
    return getattr(adapter, "spec_table", None) or adapter.name


def table_owner(table: str, first: str | None = None) -> Adapter | None:
    """The registered adapter whose spec table is `table`: the adapter of that name, else the adapter `first`
    (usually the spec's own), else any other registered adapter (loaded only then); None when none owns it."""
    eps = _entry_points()
    for name in dict.fromkeys(n for n in (table, first, *sorted(eps)) if n in eps):
        try:
            adapter = get_adapter(name)
        except AdapterError:
            continue  # an adapter that cannot load owns no table; its own spec fails on get_adapter
        if spec_table(adapter) == table:
            return adapter
    return None


def table_names() -> list[str]:
    """Every name a spec table can have: registered adapter names, plus the tables loaded adapters declare."""
    with _lock:
        declared = {spec_table(adapter) for adapter in _loaded.values()}
    return sorted(set(_entry_points()) | declared)
