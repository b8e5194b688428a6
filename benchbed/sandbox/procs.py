"""Child processes on the asyncio loop without a watcher thread: pidfd for exit, non-blocking pipes with caps."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

_CHUNK = 1 << 16
T = TypeVar("T")


@dataclass
class CappedStream:
    """Reads one pipe into memory up to `cap` bytes; calls `on_overflow` once when the cap is passed."""

    fd: int
    cap: int
    on_overflow: Callable[[], None] | None = None
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    eof: bool = False
    on_data: Callable[[bytes], None] | None = None

    def read_available(self) -> None:
        while not self.eof:
            try:
                chunk = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                return
            except OSError:
                self.eof = True
                return
            if not chunk:
                self.eof = True
                return
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.data += chunk[: max(room, 0)]
                if not self.truncated:
                    self.truncated = True
                    if self.on_overflow:
                        self.on_overflow()
                self.eof = True  # stop reading: the writer is being killed, further bytes are discarded
                return
            self.data += chunk
            if self.on_data:
                self.on_data(chunk)


# vfork+exec blocks the spawning thread until the child has exec'd, which on a saturated host is a scheduler
# wait of tens of ms; spawning from a few threads keeps the event loop (and other spawns) moving meanwhile.
SPAWN_THREADS = 8
_spawner: ThreadPoolExecutor | None = None


def run_blocking(fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
    """Run a blocking call (spawn, cgroup mkdir/rmdir) on the spawn threads."""
    global _spawner
    if _spawner is None:
        _spawner = ThreadPoolExecutor(SPAWN_THREADS, thread_name_prefix="benchbed-spawn")
    return asyncio.get_running_loop().run_in_executor(_spawner, fn, *args)


def _kill_spawned(future: asyncio.Future[subprocess.Popen[bytes]]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    popen = future.result()
    popen.kill()
    popen.wait()
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            pipe.close()


class Child:
    """A spawned process whose exit is seen through a pidfd and whose stdout/stderr are read on the loop."""

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cap: int,
        on_overflow: Callable[[], None] | None = None,
        pass_fds: Sequence[int] = (),
        env: dict[str, str] | None = None,
        stdin_pipe: bool = False,
        prepare: Callable[[], object] | None = None,
        inline: bool = False,
    ) -> Child:
        """Spawn on a worker thread, or with `inline` on the loop's (no hand-off there and back, for a caller that
        knows nothing else is spawning); `prepare` runs first, on the same thread."""
        stdin = subprocess.PIPE if stdin_pipe else subprocess.DEVNULL

        def work() -> subprocess.Popen[bytes]:
            if prepare is not None:
                prepare()
            return subprocess.Popen(
                list(argv), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                close_fds=True, pass_fds=tuple(pass_fds), env=env,
            )  # fmt: skip

        if inline:
            return cls(work(), cap=cap, on_overflow=on_overflow)
        spawning = run_blocking(work)
        try:
            popen = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            spawning.add_done_callback(_kill_spawned)  # never leave a process we stopped waiting for
            raise
        return cls(popen, cap=cap, on_overflow=on_overflow)

    def __init__(
        self, popen: subprocess.Popen[bytes], *, cap: int, on_overflow: Callable[[], None] | None = None
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.popen = popen
        self.pid = self.popen.pid
        self.exited: asyncio.Future[int] = self.loop.create_future()
        self.streams: list[CappedStream] = []
        for pipe in (self.popen.stdout, self.popen.stderr):
            assert pipe is not None
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            stream = CappedStream(fd, cap, on_overflow)
            self.streams.append(stream)
            self.loop.add_reader(fd, self._on_readable, stream)
        self.pidfd = os.pidfd_open(self.pid)
        self.loop.add_reader(self.pidfd, self._on_exit)
        self._closed = False

    @property
    def stdout(self) -> CappedStream:
        return self.streams[0]

    @property
    def stderr(self) -> CappedStream:
        return self.streams[1]

    def _on_readable(self, stream: CappedStream) -> None:
        stream.read_available()
        if stream.eof:
            self.loop.remove_reader(stream.fd)

    def _on_exit(self) -> None:
        self.loop.remove_reader(self.pidfd)
        rc = self.popen.wait()
        if not self.exited.done():
            self.exited.set_result(rc)

    def kill(self) -> None:
        if not self.exited.done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, 9)

    def finish_reading(self) -> None:
        """Take what is already in the pipes and stop reading (processes left behind may hold them open)."""
        for stream in self.streams:
            if not stream.eof:
                stream.read_available()
                self.loop.remove_reader(stream.fd)
                stream.eof = True

    def close(self) -> None:
        """Release fds; the process must have exited (or be killed and awaited) first."""
        if self._closed:
            return
        self._closed = True
        self.finish_reading()
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                pipe.close()
        if not self.exited.done():
            self.loop.remove_reader(self.pidfd)
        os.close(self.pidfd)

    async def wait(self) -> int:
        return await self.exited


_subreaper_users = 0


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so processes
    of a killed sandbox come back to us and can be reaped at once instead of lingering as zombies. Counted:
    release_subreaper() turns it off again when the last user is done."""
    global _subreaper_users
    if _subreaper_users == 0 and not _prctl_subreaper(1):
        return False
    _subreaper_users += 1
    return True


def release_subreaper() -> None:
    global _subreaper_users
    _subreaper_users = max(0, _subreaper_users - 1)
    if _subreaper_users == 0:
        _prctl_subreaper(0)


def _prctl_subreaper(on: int) -> bool:
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, on, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(uid_lo: int, uid_hi: int) -> int:
    """Reap exited children whose uid is in [uid_lo, uid_hi) (orphans of killed sandboxes). waitid finds them in
    O(1) while they come first; when another zombie of ours stands first (a process whose owner reaps it later),
    the sandbox orphans behind it are found by pid instead, so they never pile up behind it."""
    reaped = 0
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if info is None:
            return reaped
        if not uid_lo <= info.si_uid < uid_hi:
            return reaped + _reap_zombie_children(uid_lo, uid_hi)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)
            reaped += 1


def _reap_zombie_children(uid_lo: int, uid_hi: int) -> int:
    """Reap, by pid, this process's zombie children whose uid is in [uid_lo, uid_hi) (a scan of /proc)."""
    me = str(os.getpid())
    reaped = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        if fields.get("PPid", "").strip() != me or not fields.get("State", "").strip().startswith("Z"):
            continue
        if uid_lo <= int(fields.get("Uid", "0").split()[0]) < uid_hi:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(status.parent.name), os.WNOHANG)
                reaped += 1
    return reaped
