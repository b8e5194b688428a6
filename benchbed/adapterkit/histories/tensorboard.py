"""TensorBoard event files read with tensorboard's own event loader and protobuf classes (no torch): one scalar per
(tag, step), as torch's SummaryWriter, tensorboardX and the TensorBoard 2 summary API write them."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass
class EventScalars:
    """One event file's scalars as (tag, step, wall_time, value) in file order, and, where the file is cut or a
    record fails its checksum, the warning that says at which byte (the scalars before it are kept)."""

    rows: list[tuple[str, int, float, float]]
    damage: str | None = None
    texts: dict[str, Any] = field(default_factory=dict)  # text summaries by tag, hparams under "hparams"


def read_event_file(path: Path) -> EventScalars:
    """Every scalar in one event file, each record's length and data checked against their CRC-32C."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.util import tensor_util
    except ImportError as exc:
        raise TensorboardUnavailable(f"reading {path} needs tensorboard: {INSTALL_HINT}") from exc
    out: list[tuple[str, int, float, float]] = []
    texts: dict[str, Any] = {}
    records = _Records(path)
    for offset, data in records:
        try:
            event = Event.FromString(data)
        except Exception:  # protobuf's DecodeError: a record whose checksum matched but whose bytes are no event
            return EventScalars(out, _damage(path, offset, "a record that is no TensorBoard event", len(out)), texts)
        out += event_scalars(event, tensor_util, texts)
    return EventScalars(out, _damage(path, *records.damage, len(out)) if records.damage else None, texts)


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
    run writes its own, so rows of one step are kept apart)."""
    files = event_files(path)
    if not files:
        raise HistoryError(f"{path}: no TensorBoard event files ({EVENT_FILE}.*)")
    warnings: list[str] = []
    rows, parts = [], []
    texts: dict[str, Any] = {}
    partial = False
    for file in files:
        try:
            scalars = read_event_file(file)
        except TensorboardUnavailable:
            raise
        except Exception as exc:  # a truncated or foreign event file must not lose the others
            warnings.append(f"{file}: unreadable TensorBoard event file ({type(exc).__name__}: {exc}); skipped")
            partial = True
            continue
        if scalars.damage:
            warnings.append(scalars.damage)
            partial = True
        name = str(file.relative_to(path)) if file != path else file.name
        if scalars.texts:
            texts[name] = scalars.texts
        for entry in by_step(file, scalars.rows):
            rows.append((entry.step, entry.wall_time, entry.values))
            parts.append(name)
    if not rows and not warnings:
        raise HistoryError(f"{path}: the TensorBoard event files hold no scalars")
    source = HistorySource("tensorboard", path.name, str(path.resolve()))
    frame = frame_from_rows(rows, parts)
    return History(source, frame, files=files, warnings=warnings, partial=partial, texts=texts)
