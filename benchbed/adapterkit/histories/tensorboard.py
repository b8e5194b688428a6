"""TensorBoard event files read with tensorboard's own event loader and protobuf classes (no torch): one scalar per
(tag, step), as torch's SummaryWriter, tensorboardX and the TensorBoard 2 summary API write them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_rows

INSTALL_HINT = "pip install 'benchbed[tensorboard]' (the optional extra with tensorboard)"
EVENT_FILE = "events.out.tfevents"


class TensorboardUnavailable(HistoryError):
    """tensorboard (the event reader) is not installed."""


@dataclass
class ScalarDict:
    """All scalars one event file holds for one step."""

    file: str
    step: int
    values: dict[str, float]
    wall_time: float


def read_event_file(path: Path) -> list[tuple[str, int, float, float]]:
    """(tag, step, wall_time, value) for every scalar in one event file, in file order."""
    try:
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
        from tensorboard.util import tensor_util
    except ImportError as exc:
        raise TensorboardUnavailable(f"reading {path} needs tensorboard: {INSTALL_HINT}") from exc
    out: list[tuple[str, int, float, float]] = []
    for event in LegacyEventFileLoader(str(path)).Load():
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                number = float(value.simple_value)
            elif kind == "tensor" and value.metadata.plugin_data.plugin_name == "scalars":
                number = float(tensor_util.make_ndarray(value.tensor).item())
            else:
                continue
            out.append((value.tag, int(event.step), float(event.wall_time), number))
    return out


def scalar_dicts(path: Path) -> list[ScalarDict]:
    """Group one file's scalars by step; the dict's time is the latest wall time among its scalars."""
    grouped: dict[int, ScalarDict] = {}
    for tag, step, wall_time, number in read_event_file(path):
        entry = grouped.get(step)
        if entry is None:
            entry = grouped[step] = ScalarDict(str(path), step, {}, wall_time)
        entry.values[tag] = number
        entry.wall_time = max(entry.wall_time, wall_time)
    return [grouped[s] for s in sorted(grouped)]


def event_files(path: Path) -> list[Path]:
    """The event files a path names: the file itself, or every one under a folder, in path order."""
    if path.is_file():
        return [path]
    found = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(folder) / n for n in sorted(files) if n.startswith(EVENT_FILE)]
    return found


def read_tensorboard(path: Path) -> History:
    """Every event file at `path` as one history: a row per (file, step), `part` naming the file (each process of a
    run writes its own, so rows of one step are kept apart)."""
    files = event_files(path)
    if not files:
        raise HistoryError(f"{path}: no TensorBoard event files ({EVENT_FILE}.*)")
    warnings: list[str] = []
    rows, parts = [], []
    partial = False
    for file in files:
        try:
            entries = scalar_dicts(file)
        except TensorboardUnavailable:
            raise
        except Exception as exc:  # a truncated or foreign event file must not lose the others
            warnings.append(f"{file}: unreadable TensorBoard event file ({type(exc).__name__}: {exc}); skipped")
            partial = True
            continue
        name = str(file.relative_to(path)) if file != path else file.name
        for entry in entries:
            rows.append((entry.step, entry.wall_time, entry.values))
            parts.append(name)
    if not rows and not warnings:
        raise HistoryError(f"{path}: the TensorBoard event files hold no scalars")
    source = HistorySource("tensorboard", path.name, str(path.resolve()))
    return History(source, frame_from_rows(rows, parts), files=files, warnings=warnings, partial=partial)
