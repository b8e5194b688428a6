"""What benchbed launched dies with benchbed: a watchdog process beside each launch waits on a pipe only benchbed
holds. When the launch ends normally benchbed says so and the watchdog exits; when benchbed itself dies without
a word (SIGKILL, the OOM killer) the pipe closes and the watchdog stops what was launched: a local process group
(SIGTERM, then SIGKILL after a grace period, then the sandbox cgroups its processes owned), or a scheduler's job
(`scancel`, Ray's job stop) by the command it was given.

Stdlib only at import (`python -m benchbed.launch.watchdog` starts in a few tens of milliseconds)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from types import TracebackType

from benchbed.liveness import group_alive

GRACE_S = 10.0  # SIGTERM, then this long for the group to exit, then SIGKILL
DONE = b"done\n"
PR_SET_PDEATHSIG = 1


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here, not in a forked child


def die_with_parent() -> None:
    """In a child between fork and exec: a session of its own, and SIGTERM when the benchbed thread that started it
    dies (Linux's parent-death signal; the watchdog covers its descendants)."""
    os.setsid()
    with contextlib.suppress(AttributeError):
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Watchdog:
    """`with Watchdog(pgid=...)` or `with Watchdog(command=[...])` around the time a launch runs."""

    def __init__(self, pgid: int | None = None, command: list[str] | None = None) -> None:
        self.order = {"pgid": pgid} if pgid is not None else {"command": command}
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Watchdog:
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "benchbed.launch.watchdog", json.dumps(self.order)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        except OSError:  # no watchdog (no processes left?): the launch still runs, as before
            self.proc = None
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.write(DONE)
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def stop_group(pgid: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM the group, SIGKILL what is left after `grace_s`, then remove sandbox cgroups left by dead owners."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace_s
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not group_alive(pgid):
            break
    from benchbed.sandbox.cgroups import detect_layout, sweep

    sweep(detect_layout()[0])


def main(order_json: str) -> int:
    order = json.loads(order_json)
    said = sys.stdin.buffer.read()  # returns at EOF: benchbed closed the pipe, or died
    if said.endswith(DONE):
        return 0
    if order.get("pgid") is not None:
        stop_group(int(order["pgid"]))
    elif order.get("command"):
        subprocess.run(order["command"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120, check=False)  # fmt: skip
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in benchbed's terminal is benchbed's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(main(sys.argv[1]))
