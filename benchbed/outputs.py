"""The one way benchbed writes a file (records, traces, exports, pages, reports, JUnit, calibrated specs, plans).

A regular file is written to a uniquely named temp file beside it, synced, then renamed over it: a reader sees
the old file or the new one, never half of one, and two writers never share a temp file. Whatever fails, the temp
file is removed and the error names the user's path. A symlink is written through to its target (the link stays);
a device, FIFO or socket (`/dev/null`, `/dev/stdout`) is written in place, never replaced; a directory is refused.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import BinaryIO

from benchbed.errors import OutputError

BUFFER_BYTES = 1 << 20


class _FdWriter(io.RawIOBase):
    """A raw writer over a descriptor through os.write (short writes resumed), so every byte goes through one call."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def release(self) -> None:
        """Close the descriptor once; a later flush (say, by the garbage collector) fails instead of writing
        into whatever file reuses the number."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        return done


@cache
def _umask() -> int:
    """The process umask (read once: setting it to read it is not thread safe later)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _failure(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"{path}: cannot write ({exc.strerror or exc})")


def _destination(path: Path) -> tuple[Path, bool]:
    """(the file to write, whether to write it in place): a symlink resolves to its target, an existing
    non-regular file is written in place, a directory is refused."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Path(os.path.realpath(path)), False  # absent, or a link to an absent file: create the target
    except OSError as exc:
        raise _failure(path, exc) from None
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a directory; expected a file path")
    if not stat.S_ISREG(mode):
        return path, True
    return Path(os.path.realpath(path)), False


def check_output(path: str | Path) -> None:
    """Refuse, before any work starts, an output path that cannot be written: a directory, a read-only device,
    a missing or unwritable directory (tested by creating and removing a temp file in it)."""
    path = Path(path)
    target, in_place = _destination(path)
    if in_place:
        if not os.access(target, os.W_OK):
            raise OutputError(f"{path}: cannot write (Permission denied)")
        return
    folder = target.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise OutputError(f"{path}: cannot write ({folder} is not a directory)")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        raise _failure(path, exc) from None
    os.close(fd)
    os.unlink(probe)


@contextmanager
def open_output(path: str | Path) -> Iterator[BinaryIO]:
    """A buffered binary file for `path`; on leaving the block the file is complete at `path`, or (on any
    error) `path` is as it was and no temp file remains. OSErrors of the write become OutputError naming `path`."""
    path = Path(path)
    target, in_place = _destination(path)
    if in_place:
        with _translated(path):
            raw = _FdWriter(os.open(target, os.O_WRONLY | os.O_CLOEXEC))
            try:
                fh = io.BufferedWriter(raw, BUFFER_BYTES)
                yield fh  # type: ignore[misc]
                fh.flush()
            finally:
                raw.release()
        return
    with _translated(path):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    raw = _FdWriter(fd)
    try:
        with _translated(path):
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.fchmod(fd, mode)
            fh = io.BufferedWriter(raw, BUFFER_BYTES)
            yield fh  # type: ignore[misc]
            fh.flush()
            os.fsync(fd)
            raw.release()
            os.replace(tmp, target)
            _sync_dir(target.parent)
    except BaseException:
        raw.release()
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    """OSErrors of writing `path` (no file name, or a temp file's) as one OutputError line naming `path`;
    an OSError about another file (something the block reads) passes through unchanged."""
    try:
        yield
    except OSError as exc:
        if (
            exc.filename is None
            or Path(str(exc.filename)).name.startswith(f".{path.name}")
            or exc.filename in (str(path), os.path.realpath(path))
        ):
            raise _failure(path, exc) from None
        raise


def _sync_dir(folder: Path) -> None:
    """Make the rename durable (best effort: some filesystems refuse to sync a directory)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_output(path: str | Path, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` as described above; returns `path`."""
    with open_output(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)
