"""Any history of the loop's keys (its metrics JSONL, or the same keys in W&B, MLflow or TensorBoard) -> the trace:
one agg row per mapped key and step, every other number kept as `native.histloop.<key>`."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.example_history.discover import HISTORY

from benchbed.adapterkit.histories import History, HistorySource, history_kind, open_history
from benchbed.adapterkit.histories.history import frame_from_rows
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.adapterkit.lines import JsonLines
from benchbed.errors import NotThisFrameworkError
from benchbed.trace import Trace, TraceBuilder, TraceMeta

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
ROLES = ("step", "component", "counter", "framework")


def parse_path(path: Path) -> Trace:
    history = read_history(path / HISTORY if (path / HISTORY).is_file() else path)
    release = KEYMAP.releases[-1]
    mapped = {native: key for role in ROLES for native, key in KEYMAP.mapping(release, role).items()}
    if not set(KEYMAP.mapping(release, "step")) <= set(history.keys):
        raise NotThisFrameworkError(
            f"not a history-loop run: {path} logs no {', '.join(KEYMAP.mapping(release, 'step'))}"
        )
    builder = TraceBuilder()
    for step, _, values in history.rows():
        for native, value in values.items():
            builder.agg(mapped.get(native, f"native.histloop.{native}"), step, value, actor="trainer")
    meta = TraceMeta(adapter="example_history", framework="histloop", framework_version=release, mode="sync",
                     sources=[str(f) for f in history.files], warnings=history.warnings, partial=history.partial,
                     extra={"history": history.source.as_dict()})  # fmt: skip
    return builder.build(meta)


def read_history(location: Path) -> History:
    """The history at `location` through the kit; flat JSON lines (`{"step": N, key: value, ...}`) are read with
    the kit's JsonLines while the histories package has no JSONL source of its own."""
    if history_kind(location) is None:
        raise NotThisFrameworkError(f"not a history-loop run: {location} holds no history the kit can read")
    if location.suffix != ".jsonl":
        return open_history(location)
    warnings: list[str] = []
    lines = (r for _, r in JsonLines(location, warnings) if isinstance(r.get("step"), int))
    rows = [(r["step"], None, {k: v for k, v in r.items() if k != "step" and _number(v)}) for r in lines]
    if not rows:
        raise NotThisFrameworkError(f"not a history-loop run: {location} holds no rows with a step")
    source = HistorySource(tracker="jsonl", run_id=location.parent.name, uri=str(location))
    return History(source, frame_from_rows(rows), files=[location], warnings=warnings)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
