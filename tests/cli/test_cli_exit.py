"""`benchbed` ends when its error is printed, whatever a tracker's client left behind: a non-daemon thread blocked
on a server that never answers, or a helper process (wandb's service); each runs in a child Python process here."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

LEFT_BEHIND = """
import subprocess, sys, threading, time
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(helper.pid, flush=True)
threading.Thread(target=time.sleep, args=(600,)).start()  # non-daemon: the interpreter would wait for it
from benchbed.cli.main import cli
cli(["ingest", "/nonexistent/run"], prog_name="benchbed")
"""


def test_an_error_ends_the_process_and_its_helpers_although_a_thread_is_left() -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", LEFT_BEHIND], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and time.monotonic() - started < 100
    assert done.stderr.strip().splitlines() == [
        "benchbed: error: benchbed ingest: /nonexistent/run: no such file or directory (see benchbed ingest --help)"
    ]
    helper = int(done.stdout.split()[0])
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE
