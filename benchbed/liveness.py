"""Whether a process or a process group still exists, by signal 0: the one check the catalog's write claims, the
watchdog and the sandbox sweeps use to tell a live owner from a dead one. Stdlib only (the watchdog imports it)."""

from __future__ import annotations

import os
from collections.abc import Callable


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists and has not exited (one of another user's counts: kill(0) is
    refused, not failed); False for pid <= 0, which names a process group, not a process, and for a zombie: an
    owner killed with its parent and reparented to a reaper that never waits for it (a subreaper) is dead."""
    return pid > 0 and _exists(os.kill, pid) and not _zombie(pid)


def group_alive(pgid: int) -> bool:
    """True while a process group with this id has a member."""
    return pgid > 0 and _exists(os.killpg, pgid)


def _exists(send: Callable[[int, int], None], ident: int) -> bool:
    try:
        send(ident, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _zombie(pid: int) -> bool:
    """True when /proc says the process has exited and waits to be reaped (state Z); False where /proc is absent."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
