"""The class a framework adapter declares: its name, its options model, and where its renderer, parser and run
marker live. The delegation to them is written here once; named modules are imported on first use, so loading
the adapter (for `benchbed --help`, a spec's table, the registry) imports none of its parsing code."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from benchbed.adapter import Adapter, FigureDefinition, HistorySupport
from benchbed.runs import runs_under

if TYPE_CHECKING:
    from benchbed.adapter import LaunchPlan
    from benchbed.adapterkit.histories import History
    from benchbed.spec.model import ExperimentSpec
    from benchbed.trace import Trace

# A function, or where it lives: "package.module:function", or ".module:function" relative to the adapter's package.
Ref = str | Callable[..., Any]


class FrameworkAdapter(Adapter):
    """An adapter (the `benchbed.adapter.Adapter` contract) as data: a subclass sets `name`, `options_model`,
    `renderer` (spec, run_dir) -> LaunchPlan, `parser` (path) -> Trace and `run_marker` (file) -> the run
    directory it marks, or None (see `benchbed.runs.runs_under`).

    An adapter that reads tracker histories (W&B, MLflow, TensorBoard) also sets `history_parser` (History) ->
    Trace, `history_kinds` (the sources `parse` hands to it) and `keymap` (its key-map file, whose `identify`
    list says which keys mark a history as this framework's). One whose runs can be followed while they run sets
    `watcher` (run_dir, LiveFigures) -> a live reader (benchbed.watch.readers.LiveReader)."""

    renderer: ClassVar[Ref]
    parser: ClassVar[Ref]
    run_marker: ClassVar[Ref]
    history_parser: ClassVar[Ref | None] = None
    history_kinds: ClassVar[tuple[str, ...]] = ("wandb", "wandb-cloud", "mlflow", "tensorboard")
    keymap: ClassVar[str | None] = None  # file name beside the adapter's package, e.g. "keymap.toml"
    watcher: ClassVar[Ref | None] = None  # (run_dir, LiveFigures) -> its live reader, for `benchbed watch`

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        """The command that runs `spec` with its artifacts written under `run_dir`."""
        return self._function("renderer")(spec, Path(run_dir))

    def parse(self, path: Path) -> Trace:
        """A run directory or a native file as the canonical trace (NotThisFrameworkError for another's); a tracker
        history the adapter reads (a W&B run directory, an MLflow store, TensorBoard event files) goes to
        `parse_history`."""
        support = self.history()
        if support is not None:
            from benchbed.adapterkit.histories import history_kind, open_history

            if history_kind(Path(path)) in support.kinds:
                return support.parse(open_history(Path(path)))
        return self._function("parser")(Path(path))

    def history(self) -> HistorySupport | None:
        """With a `history_parser`: the `history_kinds` plus every registered history source, read by
        `parse_history`."""
        if self.history_parser is None:
            return None
        from benchbed.adapterkit.histories.reader import HISTORY_SOURCES

        return HistorySupport((*self.history_kinds, *HISTORY_SOURCES.names()), self.parse_history)

    def live_reader(self) -> Callable[..., Any] | None:
        """What builds the live reader of a run directory (see benchbed.adapter.Adapter.live_reader): for an adapter
        that reads tracker histories, the kit's follower of the history's format when the directory is one (W&B,
        TensorBoard, an MLflow file store), else the `watcher` it declares; None when it has neither."""
        own = None if type(self).watcher is None else self._function("watcher")
        if self.history_parser is None:
            return own
        from benchbed.adapterkit.live_history import history_or_own

        return functools.partial(history_or_own, self.name, self.history_kinds, self._function("history_parser"), own)

    def parse_history(self, history: History) -> Trace:
        """A tracker's history of a run as the canonical trace, through the adapter's key map."""
        if self.history_parser is None:
            from benchbed.errors import AdapterError

            raise AdapterError(f"the {self.name} adapter reads no tracker histories ({history.source.uri})")
        if self.keymap is not None and not self.recognises(history.keys):
            from benchbed.errors import NotThisFrameworkError

            shown = ", ".join(history.keys[:6]) + (" ..." if len(history.keys) > 6 else "")
            # a damaged history may have lost the keys that would name it: say where it is damaged first
            damage = f"{history.warnings[0]}; " if history.partial and history.warnings else ""
            raise NotThisFrameworkError(
                f"{damage}not a {self.name} history: {history.source.uri}: none of its keys ({shown}) is one only "
                f"{self.name} logs ({', '.join(self._keymap().identify)})"
            )
        return self._function("history_parser")(history)

    def recognises(self, keys: Iterable[str]) -> bool:
        """Whether a history with these keys is this framework's: one of them matches the key map's `identify`, and
        no registered adapter whose key map `extends` this one recognises them (a fork's history logs its base's
        keys too: it is the fork's)."""
        if self.keymap is None:
            return False
        keys = list(keys)
        pattern = self._keymap().identifier()
        return any(pattern.match(k) for k in keys) and not any(fork.recognises(keys) for fork in self._forks())

    def _forks(self) -> list[FrameworkAdapter]:
        """The registered adapters whose key maps extend this adapter's framework."""
        from benchbed.adapter import available_adapters, get_adapter
        from benchbed.errors import AdapterError

        framework, forks = self._keymap().framework, []
        for name in available_adapters():
            try:
                adapter = get_adapter(name)
            except AdapterError:  # a broken outside adapter extends nothing
                continue
            mapped = name != self.name and isinstance(adapter, FrameworkAdapter) and adapter.keymap is not None
            if mapped and adapter._keymap().extends == framework:
                forks.append(adapter)
        return forks

    def figure_definitions(self) -> dict[str, FigureDefinition]:
        """From the key map's `framework` entries: `framework_<name>` -> the native keys it is read from, each with
        its note (the framework's definition), and the unit (a percentage is kept as a ratio), over every release."""
        if self.keymap is None:
            return {}
        keymap = self._keymap()
        found: dict[str, dict[str, str]] = {}
        units: dict[str, str] = {}
        for release in keymap.releases:
            for entry in keymap.at(release, "framework"):
                if entry.canonical.startswith("framework.") and not entry.canonical.endswith("*"):
                    name = "framework_" + entry.canonical.removeprefix("framework.")
                    found.setdefault(name, {})[entry.native] = f"{entry.native}: {entry.note}" if entry.note else ""
                    units.setdefault(name, "ratio" if entry.unit == "%" else entry.unit)
        return {
            name: FigureDefinition("; ".join(text or native for native, text in texts.items()), units[name])
            for name, texts in found.items()
        }

    def _keymap(self) -> Any:
        from benchbed.adapterkit.keymaps import load_keymap

        package = sys.modules[type(self).__module__]
        return load_keymap(Path(package.__file__ or "").with_name(str(self.keymap)))

    def find_runs(self, path: Path) -> list[Path]:
        """The run directories under `path`: those its files mark, outermost first."""
        return runs_under(Path(path), self._function("run_marker"))

    def _function(self, role: str) -> Callable[..., Any]:
        ref = getattr(type(self), role)  # read on the class: a plain function stays unbound
        if callable(ref):
            return ref
        return _resolve(ref, sys.modules[type(self).__module__].__package__ or "")


class HistoryAdapter(FrameworkAdapter):
    """A framework adapter for a framework whose runs are tracker histories, laid out as every such adapter is:
    `render.py` (render_plan), `parse.py` (parse_path, parse_history), `discover.py` (marks_run), `keymap.toml`.
    A subclass sets `name` and `options_model`, and only what it keeps elsewhere (a run marker from the kit)."""

    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".parse:parse_history"
    keymap = "keymap.toml"


@cache
def _resolve(ref: str, package: str) -> Callable[..., Any]:
    """Import "module:function" (a leading "." is relative to `package`) and return the function."""
    module, _, function = ref.partition(":")
    return getattr(importlib.import_module(module, package), function)
