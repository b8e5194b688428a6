"""TensorBoard event files read with tensorboard's own event loader and protobuf classes (no torch): one scalar per
(tag, step), as torch's SummaryWriter, tensorboardX and the TensorBoard 2 summary API write them."""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, frame_from_matrix
from benchbed.adapterkit.histories.row_blocks import RowBlocks

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


@dataclass
class EventScalars:
    """One event file's scalars as (tag, step, wall_time, value) in file order, and, where the file is cut or a
    record fails its checksum, the warning that says at which byte (the scalars before it are kept)."""

    rows: list[tuple[str, int, float, float]]
    damage: str | None = None
    texts: dict[str, Any] = field(default_factory=dict)  # text summaries by tag, hparams under "hparams"


def read_event_file(path: Path) -> EventScalars:
    """Every scalar in one event file, each record's length and data checked against their CRC-32C."""
    out: list[tuple[str, int, float, float]] = []
    texts: dict[str, Any] = {}
    damage = scan_event_file(path, lambda *scalar: out.append(scalar), texts)
    return EventScalars(out, damage, texts)


def scan_event_file(path: Path, scalar: Callable[[str, int, float, float], None], texts: dict[str, Any]) -> str | None:
    """Each scalar of one event file handed to `scalar` (tag, step, wall_time, value) as its record is read, text
    summaries into `texts`; the damage warning, where the file is cut or a record fails its checksum, else None."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.util import tensor_util
    except ImportError as exc:
        raise TensorboardUnavailable(f"reading {path} needs tensorboard: {INSTALL_HINT}") from exc
    kept = 0
    records = _Records(path)
    for offset, data in records:
        try:
            event = Event.FromString(data)
        except Exception:  # protobuf's DecodeError: a record whose checksum matched but whose bytes are no event
            return _damage(path, offset, "a record that is no TensorBoard event", kept)
        for found in event_scalars(event, tensor_util, texts):
            scalar(*found)
            kept += 1
    return _damage(path, *records.damage, kept) if records.damage else None


def event_scalars(event: Any, tensor_util: Any, texts: dict[str, Any]) -> list[tuple[str, int, float, float]]:
    """One event's scalars as (tag, step, wall_time, value); its text summaries go into `texts`."""
    out: list[tuple[str, int, float, float]] = []
    if not event.HasField("summary"):
        return out
    for value in event.summary.value:
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            number = float(value.simple_value)
        elif kind == "tensor" and value.metadata.plugin_data.plugin_name == "scalars":
            number = float(tensor_util.make_ndarray(value.tensor).item())
        else:
            _keep_text(value, texts)
            continue
        out.append((value.tag, int(event.step), float(event.wall_time), number))
    return out


def _keep_text(value: Any, texts: dict[str, Any]) -> None:
    """A text summary's strings (tensorboard/plugins/text), or the hyperparameters of an hparams session start
    (tensorboard/plugins/hparams/plugin_data.proto), into `texts`: read only to find credentials in them."""
    plugin = value.metadata.plugin_data.plugin_name
    if plugin == "text" and value.HasField("tensor"):
        texts.setdefault(value.tag, []).extend(s.decode("utf-8", "replace") for s in value.tensor.string_val)
    elif plugin == "hparams":
        from tensorboard.plugins.hparams import plugin_data_pb2

        try:
            data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        except Exception:  # protobuf's DecodeError: no hyperparameters to look at
            return
        for name, hparam in data.session_start_info.hparams.items():
            kind = hparam.WhichOneof("kind")
            texts.setdefault("hparams", {})[name] = str(getattr(hparam, kind)) if kind else ""


class _Records:
    """The whole records of a TFRecord file, as (offset, data): a little-endian uint64 length, the masked CRC-32C of
    those 8 bytes, the data, the masked CRC-32C of the data (tensorflow/core/lib/io/record_writer.cc). Where the
    framing breaks, iteration stops and `damage` says at which offset and why."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.damage: tuple[int, str] | None = None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        import google_crc32c

        size = self.path.stat().st_size
        with self.path.open("rb") as fh:
            offset = 0
            while offset < size:
                header = fh.read(12)
                if len(header) < 12:
                    self.damage = (offset, "cut off inside a record header")
                    return
                length, length_crc = struct.unpack("<QI", header)
                if masked_crc(google_crc32c.value(header[:8])) != length_crc:
                    self.damage = (offset, "a record length that fails its checksum")
                    return
                if length + 16 > size - offset:
                    self.damage = (offset, f"a record of {length} bytes runs past the end")
                    return
                body = fh.read(length + 4)
                data, data_crc = body[:length], struct.unpack("<I", body[length:])[0]
                if masked_crc(google_crc32c.value(data)) != data_crc:
                    self.damage = (offset, "a record that fails its checksum")
                    return
                yield offset, data
                offset += length + 16


def masked_crc(crc: int) -> int:
    """TFRecord's masked CRC: rotated right by 15 bits plus a constant, so a CRC over CRCs stays informative."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _damage(path: Path, offset: int, why: str, kept: int) -> str:
    return f"{path}: damaged at byte {offset} ({why}); the {kept} scalars before it are read, the rest is lost"


def scalar_dicts(path: Path) -> tuple[list[ScalarDict], str | None]:
    """One file's scalars grouped by step, and the file's damage warning, if any."""
    scalars = read_event_file(path)
    return by_step(path, scalars.rows), scalars.damage


def by_step(path: Path, rows: list[tuple[str, int, float, float]]) -> list[ScalarDict]:
    """Scalars grouped by step, in step order; a dict's time is the latest wall time among its scalars."""
    grouped: dict[int, ScalarDict] = {}
    for tag, step, wall_time, number in rows:
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
    run writes its own, so rows of one step are kept apart). Scalars go into blocks of doubles as they are read (a
    row's time is the latest wall time among its scalars; a tag logged twice at a step keeps its last value), so
    memory stays within about twice the values, whatever the files' size."""
    files = event_files(path)
    if not files:
        raise HistoryError(f"{path}: no TensorBoard event files ({EVENT_FILE}.*)")
    warnings: list[str] = []
    blocks = RowBlocks()
    steps, walls, part_of = array("q"), array("d"), array("i")
    names: list[str] = []
    texts: dict[str, Any] = {}
    partial = False
    for number, file in enumerate(files):
        names.append(str(file.relative_to(path)) if file != path else file.name)
        file_texts: dict[str, Any] = {}
        rows = RowsOfSteps(number, blocks, steps, walls, part_of)
        try:
            damage = scan_event_file(file, rows.add, file_texts)
        except TensorboardUnavailable:
            raise
        except Exception as exc:  # a foreign event file must not lose the others; its scalars read so far are kept
            damage = f"{file}: unreadable TensorBoard event file ({type(exc).__name__}: {exc}); the rest of it skipped"
        if damage:
            warnings.append(damage)
            partial = True
        if file_texts:
            texts[names[-1]] = file_texts
    if not blocks.rows and not warnings:
        raise HistoryError(f"{path}: the TensorBoard event files hold no scalars")
    source = HistorySource("tensorboard", path.name, str(path.resolve()))
    order = blocks.order()
    parts = [names[i] for i in np.frombuffer(part_of, dtype=np.int32)[order].tolist()]
    steps_in_order, walls_in_order = np.frombuffer(steps, dtype=np.int64)[order], np.frombuffer(walls)[order]
    frame = frame_from_matrix(steps_in_order, walls_in_order, blocks.keys(), blocks.matrix(order), parts)
    return History(source, frame, files=files, warnings=warnings, partial=partial, texts=texts)


@dataclass
class RowsOfSteps:
    """One event file's scalars into `blocks`: a row per step, ranked after the earlier files' rows and by step."""

    file: int
    blocks: RowBlocks
    steps: array[int]
    walls: array[float]
    part_of: array[int]
    row_of: dict[int, int] = field(default_factory=dict)

    def add(self, tag: str, step: int, wall_time: float, value: float) -> None:
        row = self.row_of.get(step)
        if row is None:
            row = self.row_of[step] = self.blocks.row((self.file, step))
            self.steps.append(step)
            self.walls.append(wall_time)
            self.part_of.append(self.file)
        elif wall_time > self.walls[row]:
            self.walls[row] = wall_time
        self.blocks.set(row, tag, value)
