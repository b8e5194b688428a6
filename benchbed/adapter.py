"""The adapter contract (core): render a spec into a LaunchPlan, parse a run's artifacts into a Trace; plus the registry
of adapters (`ADAPTERS`). Imports nothing from the plug-in folder (benchbed.adapters) nor from the spec."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from benchbed.errors import AdapterError
from benchbed.registry import Registry

if TYPE_CHECKING:
    from benchbed.adapterkit.histories import History
    from benchbed.spec.model import ExperimentSpec
    from benchbed.trace import Trace


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


class FigureDefinition(NamedTuple):
    """A framework's own figure: what it is, in the framework's words (native keys and note), and its unit."""

    text: str
    unit: str


@dataclass(frozen=True)
class HistorySupport:
    """An adapter's reading of tracker histories: the history sources it takes (their kinds, see
    `benchbed.adapterkit.histories.history_kind`) and its parser of one History into the canonical trace."""

    kinds: tuple[str, ...]
    parse: Callable[[History], Trace]


class Adapter(ABC):
    """A framework integration, built-in or plug-in: every adapter subclasses this class and registers it in the
    `benchbed.adapters` entry-point group. `render` and `parse` are pure: no framework import, no network.

    Optional, typed: `options_model`, the pydantic model (extra="forbid") that validates the spec's table of this
    adapter once, when the spec is loaded (`spec.adapter_options()` returns it); `spec_table`, that table's name
    when it is not `name`; `find_runs`, the runs under a directory (default: the directory is one run);
    `figure_definitions`, how the framework defines its own figures (default: none known); `history`, the tracker
    histories it reads (default: none); `recognises`, whether a history's keys are this framework's.
    `benchbed.adapterkit.adapter.FrameworkAdapter` declares render, parse and find_runs as functions."""

    name: ClassVar[str]
    options_model: ClassVar[type[BaseModel] | None] = None
    spec_table: ClassVar[str | None] = None

    @property
    def table(self) -> str:
        """The name of this adapter's table in a spec: `spec_table` when declared, else the adapter's name."""
        return self.spec_table or self.name

    @abstractmethod
    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        """The command that runs `spec` with its artifacts written under `run_dir`."""

    @abstractmethod
    def parse(self, path: Path) -> Trace:
        """Read a run directory (or a single native file) into the canonical trace.

        Raises NotThisFrameworkError when the input was written by another framework."""

    def find_runs(self, path: Path) -> list[Path]:
        """The run directories under the directory `path`, outermost first; by default `path` is one run."""
        return [Path(path)]

    def live_reader(self) -> Callable[..., Any] | None:
        """What follows this adapter's runs while they run (`benchbed watch`): called with the run directory and the
        LiveFigures to feed, it returns a reader (benchbed.watch.readers.LiveReader); None, the default, when the
        adapter's files are read only once the run ends."""
        return None

    def history(self) -> HistorySupport | None:
        """The tracker histories (W&B, MLflow, TensorBoard, a registered source) this adapter reads and how; None,
        the default, when it reads none."""
        return None

    def recognises(self, keys: Iterable[str]) -> bool:
        """Whether a history logging these keys is this framework's (so `ingest` can pick the adapter); by
        default no history is recognised."""
        return False

    def figure_definitions(self) -> dict[str, FigureDefinition]:
        """How the framework defines each of its own figures (`framework_<name>` -> its definition and unit), so a
        comparison can say when two frameworks' own numbers are not the same quantity; by default none."""
        return {}


ADAPTERS: Registry[type[Adapter]] = Registry("benchbed.adapters", "adapter", Adapter, AdapterError)
_loaded: dict[str, Adapter] = {}  # name -> the adapter, built once
_lock = threading.Lock()


def available_adapters() -> list[str]:
    """Names registered as adapters: the `benchbed.adapters` entry-point group and in-process (nothing is imported)."""
    return ADAPTERS.names()


def get_adapter(name: str) -> Adapter:
    """Load an adapter by name, lazily, once; unknown names get a 'did you mean'."""
    with _lock:
        if name not in _loaded:
            _loaded[name] = ADAPTERS.load(name)()
        return _loaded[name]


def table_owner(table: str, first: str | None = None) -> Adapter | None:
    """The registered adapter whose spec table is `table`: the adapter of that name, else the adapter `first`
    (usually the spec's own), else any other registered adapter (loaded only then); None when none owns it."""
    known = ADAPTERS.names()
    for name in dict.fromkeys(n for n in (table, first, *known) if n in known):
        try:
            adapter = get_adapter(name)
        except AdapterError:
            continue  # an adapter that cannot load owns no table; its own spec fails on get_adapter
        if adapter.table == table:
            return adapter
    return None


def table_names() -> list[str]:
    """Every name a spec table can have: registered adapter names, plus the tables loaded adapters declare."""
    with _lock:
        declared = {adapter.table for adapter in _loaded.values()}
    return sorted(set(ADAPTERS.names()) | declared)
