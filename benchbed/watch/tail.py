"""Follow growing files by byte offset: each read returns only the complete lines written since the last one, and
survives a file that is truncated (read again from its start) or rotated (the old file drained, the new one read)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, ClassVar


@dataclass
class FileTail:
    """One followed file; `resets` counts the truncations and rotations seen."""

    path: Path
    _handle: BinaryIO | None = None
    _inode: int | None = None
    _pending: bytes = b""
    resets: int = 0

    def read(self) -> list[str]:
        """The complete lines appended since the last read (a line still being written waits for its newline)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return self._drain() if self._handle is not None else []
        lines: list[str] = []
        if self._handle is not None and stat.st_ino != self._inode:  # rotated: finish the old file, then the new
            lines = self._drain()
            self._close()
            self.resets += 1
        if self._handle is None:
            self._handle = open(self.path, "rb")  # noqa: SIM115  # held open across reads: a rotation keeps it readable
            self._inode = os.fstat(self._handle.fileno()).st_ino
        elif stat.st_size < self._handle.tell():  # truncated in place: its lines are new lines
            self._handle.seek(0)
            self._pending = b""
            self.resets += 1
        return lines + self._lines(self._handle.read())

    def remainder(self) -> str:
        """The last line read so far without its closing newline ("" if none), as a writer that stopped mid-line
        left it."""
        return self._pending.decode(errors="replace")

    def _drain(self) -> list[str]:
        assert self._handle is not None
        return self._lines(self._handle.read())

    def _lines(self, data: bytes) -> list[str]:
        if not data:
            return []
        data = self._pending + data
        complete, newline, self._pending = data.rpartition(b"\n")
        return complete.decode(errors="replace").split("\n") if newline else []

    def _close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle, self._inode, self._pending = None, None, b""

    def close(self) -> None:
        """Release the file handle."""
        self._close()


@dataclass
class ByteTail:
    """The bytes appended to one binary log since the last read, by offset, for a reader that cuts them into records
    (advancing `offset` past the whole ones). A file shorter than the offset was replaced by a new log: it is read
    again from `start` (`resets` counts it); `damage`, once a reader sets it, stops the following."""

    start: ClassVar[int] = 0  # where the first record lies
    ident: ClassVar[bytes] = b""  # what the file begins with once its header is written

    path: Path
    offset: int = 0
    damage: str | None = None
    resets: int = 0

    def appended(self) -> bytes:
        """The bytes from `offset` to the end (none while the file or its header is missing, or once damaged)."""
        if self.damage is not None:
            return b""
        try:
            with open(self.path, "rb") as fh:
                if fh.seek(0, 2) < self.offset:
                    self.offset = self.start
                    self.resets += 1
                    self.restarted()
                fh.seek(0)
                if not self.header_ready(fh.read(self.start)):
                    return b""
                fh.seek(self.offset)
                return fh.read()
        except FileNotFoundError:
            return b""

    def header_ready(self, head: bytes) -> bool:
        """Whether the file's first `start` bytes are a whole header this reader can follow (by default: they begin
        with `ident`); a reader that can tell a damaged header from one still being written sets `damage`."""
        return head.startswith(self.ident)

    def restarted(self) -> None:
        """Forget what was held from the log that was replaced (nothing by default)."""


@dataclass
class DirTail:
    """Every file matching `pattern` under `root`, new files picked up as they appear; lines come per file name."""

    root: Path
    pattern: str
    tails: dict[str, FileTail] = field(default_factory=dict)

    def read(self) -> dict[str, list[str]]:
        """New complete lines of each matching file, by file name, in name order."""
        for path in sorted(self.root.glob(self.pattern)):
            self.tails.setdefault(path.name, FileTail(path))
        return {name: tail.read() for name, tail in sorted(self.tails.items())}

    @property
    def resets(self) -> int:
        """Truncations and rotations seen across the files."""
        return sum(t.resets for t in self.tails.values())

    def close(self) -> None:
        """Release every file handle."""
        for tail in self.tails.values():
            tail.close()
