"""Follow a W&B `.wandb` record log as wandb appends to it: each read decodes only the chunks written since the last
offset (the LevelDB log framing that histories.wandb_file documents), keeps an entry split across blocks until its
last chunk arrives, and waits on a chunk still being written. History records become rows as `read_wandb_file`
makes them; `stats` records give the GPU samples; the `exit` record ends the run."""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from benchbed.adapterkit.histories.history import HistorySource
from benchbed.adapterkit.histories.wandb_file import (
    BLOCK,
    CHUNK_HEADER,
    FILE_HEADER,
    FIRST,
    FORMAT_VERSION,
    FULL,
    IDENT,
    LAST,
    MAGIC,
    MIDDLE,
    _apply,
    _gpu_items,
    _key,
    _loads,
    _number,
    _record_type,
    _typed_json,
    find_wandb_file,
)
from benchbed.adapterkit.live_rows import NewRows, Row, TrackerFollower
from benchbed.watch.tail import ByteTail

_CRC = [zlib.crc32(bytes([t])) for t in range(5)]


def header_damage(path: Path, head: bytes) -> str | None:
    """Why the first bytes of a `.wandb` file cannot begin a W&B record log (one line naming the file and the byte),
    as read_wandb_file's RecordLog checks them; None while they can (a header not yet whole included)."""
    if head[:4] != IDENT[: len(head[:4])]:
        return f"{path}: damaged at byte 0 (not a W&B run log: it does not start with {IDENT!r}); not followed further"
    if len(head) < FILE_HEADER:
        return None
    magic, version = struct.unpack_from("<HB", head, 4)
    if magic != MAGIC or version != FORMAT_VERSION:
        return (f"{path}: damaged at byte 4 (W&B log format {version}, magic {magic:#06x}; this reader knows format "
                f"{FORMAT_VERSION}, magic {MAGIC:#06x}); not followed further")  # fmt: skip
    return None


def _bad_header(kind: int, length: int, left: int) -> str | None:
    """Why a chunk header cannot be one a writer is still completing: a type LevelDB's log has not, or a length past
    the end of its 32 KiB block (no chunk crosses one); None for a header whose chunk may still be arriving."""
    if not FULL <= kind <= LAST:
        return f"chunk type {kind}"
    if CHUNK_HEADER + length > left:
        return f"a chunk of {length} bytes runs past its 32 KiB block"
    return None


@dataclass
class RecordLogTail(ByteTail):
    """The whole entries appended to one `.wandb` file since the last read; `damage` says where and why reading
    stopped for good (a chunk whose checksum fails once it is complete)."""

    start: ClassVar[int] = FILE_HEADER
    ident: ClassVar[bytes] = IDENT

    offset: int = FILE_HEADER
    _pending: list[bytes] = field(default_factory=list)

    def read(self) -> list[bytes]:
        """The entries completed since the last read (none while the file or its header is not yet written)."""
        return self._entries(self.appended())

    def header_ready(self, head: bytes) -> bool:
        """A whole W&B header; a damaged one sets `damage` (a header still being written is only not ready)."""
        self.damage = header_damage(self.path, head)
        return self.damage is None and len(head) >= FILE_HEADER

    def restarted(self) -> None:
        """A new log in the old one's place: its first chunk starts no entry held from the old one."""
        self._pending = []

    def _entries(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        pos, base = 0, self.offset
        while True:
            left = BLOCK - (base + pos) % BLOCK
            if left < CHUNK_HEADER:  # a block's trailer too short for a header is zero padding
                if pos + left > len(data):
                    break
                pos += left
                continue
            if pos + CHUNK_HEADER > len(data):
                break
            crc, length, kind = struct.unpack_from("<IHB", data, pos)
            end = pos + CHUNK_HEADER + length
            if (crc, length, kind) == (0, 0, 0):  # not yet written
                break
            why = _bad_header(kind, length, left)
            if why is None and end > len(data):  # still being written
                break
            if why is None and zlib.crc32(data[pos + CHUNK_HEADER : end], _CRC[kind]) != crc:
                why = "checksum mismatch"
            if why is not None:
                self.damage = f"{self.path}: damaged at byte {base + pos} ({why}); not followed further"
                break
            payload = data[pos + CHUNK_HEADER : end]
            pos = end
            if kind == FULL:
                out.append(payload)
            elif kind == FIRST:
                self._pending = [payload]
            elif kind == MIDDLE:
                self._pending.append(payload)
            else:
                out.append(b"".join([*self._pending, payload]))
                self._pending = []
        self.offset = base + pos
        return out


@dataclass
class WandbFollower(TrackerFollower):
    """The rows of a W&B run directory (or its `.wandb` file) as they are logged: one row per history record, its
    step the run's own step key where it defined one (as `read_wandb_file` takes it)."""

    tracker = "wandb"

    _tail: RecordLogTail | None = None
    _step_key: str = "_step"
    _counter: int = 0
    _record: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._record = _record_type()

    @property
    def resets(self) -> int:
        return self._tail.resets if self._tail is not None else 0

    @property
    def damage(self) -> str | None:
        """Where and why the record log stopped being readable, once it has."""
        return self._tail.damage if self._tail is not None else None

    def read(self) -> NewRows:
        """The history rows, GPU samples and config written since the last read, and whether the run exited."""
        if self._tail is None:
            found = find_wandb_file(self.location)
            if found is None:
                return NewRows()
            self._tail = RecordLogTail(found)
        new = NewRows()
        for raw in self._tail.read():
            record = self._record()
            try:
                record.ParseFromString(raw)
            except Exception:  # protobuf's DecodeError: the final parse counts and names these
                continue
            self._record_into(record, new)
        if self._tail.damage and self._tail.damage not in self.warnings:
            self.warnings.append(self._tail.damage)
        return new

    def _record_into(self, record: Any, new: NewRows) -> None:
        kind = record.WhichOneof("record_type")
        if kind == "history":
            new.rows.append(self._row(record.history.item))
        elif kind == "run":
            _apply(self.config, record.run.config.update)
            self.source = HistorySource("wandb", record.run.run_id, str(self.location), project=record.run.project)
        elif kind == "config":
            _apply(self.config, record.config.update)
        elif kind == "metric" and record.metric.glob_name == "*" and record.metric.step_metric:
            self._step_key = record.metric.step_metric
        elif kind == "stats":
            _gpu_items(record.stats, new.samples)
        elif kind == "exit":
            new.ended = True

    def _row(self, items: Any) -> Row:
        """One history record as (step, wall time, {key: number}), the `_` keys and non-numbers left out."""
        values = dict(zip(map(_key, items), _loads([i.value_json or _typed_json(i) for i in items]), strict=True))
        numbers = {k: _number(v) for k, v in values.items()}
        counter = numbers.get("_step", float(self._counter))
        self._counter += 1
        step = numbers.get(self._step_key, math.nan)
        step = counter if math.isnan(step) else step
        wall = numbers.get("_timestamp", math.nan)
        kept = {k: v for k, v in numbers.items() if k != self._step_key and not k.startswith("_") and not math.isnan(v)}
        return int(step), None if math.isnan(wall) else wall, kept

    def flush(self) -> NewRows:
        """Rows held back for a step not yet complete: none, a W&B history record is a whole step."""
        return NewRows()

    def close(self) -> None:
        """Nothing is held open between reads."""
