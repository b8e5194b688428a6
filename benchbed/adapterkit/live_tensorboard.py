"""Follow TensorBoard event files as a writer appends to them: per file, only the TFRecord records written since its
last offset (length, its masked CRC-32C, data, its masked CRC-32C: histories.tensorboard), a record still being
written left for the next read, and new event files picked up as they appear. Scalars are grouped per (file, step)
as `read_tensorboard` groups them; a step's row is released once the file has moved on to a later step (or the run
has ended), since a writer logs one step's scalars as separate events."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.tensorboard import event_files, event_scalars, masked_crc
from benchbed.adapterkit.live_rows import NewRows, TrackerFollower
from benchbed.watch.tail import ByteTail

HEADER = 12  # uint64 length + the masked CRC-32C of those 8 bytes


@dataclass
class TfRecordTail(ByteTail):
    """The whole records appended to one TFRecord file since the last read; `damage` stops the following."""

    def read(self) -> list[bytes]:
        """The records completed since the last read."""
        import google_crc32c

        data = self.appended()
        out, pos = [], 0
        while pos + HEADER <= len(data):
            length, length_crc = struct.unpack_from("<QI", data, pos)
            if masked_crc(google_crc32c.value(data[pos : pos + 8])) != length_crc:
                self.damage = f"{self.path}: damaged at byte {self.offset + pos} (record length checksum); not followed"
                break
            end = pos + HEADER + length + 4
            if end > len(data):  # still being written
                break
            body = data[pos + HEADER : end - 4]
            if masked_crc(google_crc32c.value(body)) != struct.unpack_from("<I", data, end - 4)[0]:
                self.damage = f"{self.path}: damaged at byte {self.offset + pos} (record checksum); not followed"
                break
            out.append(body)
            pos = end
        self.offset += pos
        return out


@dataclass
class _FileSteps:
    """One event file's scalars of the steps not yet released: step -> (latest wall time, {tag: value})."""

    tail: TfRecordTail
    name: str
    held: dict[int, tuple[float, dict[str, float]]] = field(default_factory=dict)


@dataclass
class TensorboardFollower(TrackerFollower):
    """The rows of the event files at `location` (one file, or every one under a folder), each named by its `part`."""

    tracker = "tensorboard"

    _files: dict[Path, _FileSteps] = field(default_factory=dict)
    _texts: dict[str, Any] = field(default_factory=dict)

    @property
    def resets(self) -> int:
        return sum(f.tail.resets for f in self._files.values())

    @property
    def damage(self) -> str | None:
        """Once every event file followed is damaged (nothing more can be read), the first one's damage."""
        damages = [f.tail.damage for f in self._files.values()]
        return damages[0] if damages and all(damages) else None

    def read(self) -> NewRows:
        """The rows of the steps each file has moved past since the last read."""
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.util import tensor_util

        new = NewRows()
        for path in event_files(self.location):
            if path not in self._files:
                name = str(path.relative_to(self.location)) if path != self.location else path.name
                self._files[path] = _FileSteps(TfRecordTail(path), name)
        for steps in self._files.values():
            for data in steps.tail.read():
                try:
                    event = Event.FromString(data)
                except Exception:  # protobuf's DecodeError: the final parse names the damage
                    continue
                for tag, step, wall, value in event_scalars(event, tensor_util, self._texts):
                    at, values = steps.held.get(step, (wall, {}))
                    values[tag] = value
                    steps.held[step] = (max(at, wall), values)
            if steps.tail.damage and steps.tail.damage not in self.warnings:
                self.warnings.append(steps.tail.damage)
            if steps.held:
                self._release(steps, max(steps.held), new)
        return new

    def flush(self) -> NewRows:
        """Every step still held, at the run's end."""
        new = NewRows()
        for steps in self._files.values():
            self._release(steps, None, new)
        return new

    def _release(self, steps: _FileSteps, below: int | None, new: NewRows) -> None:
        for step in sorted(s for s in steps.held if below is None or s < below):
            wall, values = steps.held.pop(step)
            new.rows.append((step, wall, values))
            new.parts.append(steps.name)

    def close(self) -> None:
        """Nothing is held open between reads."""
