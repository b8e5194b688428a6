"""What benchbed launched dies with benchbed: SIGKILL of benchbed (what the OOM killer sends) during a run of the
reference engine leaves none of the engine's processes running under PID 1 and none of their sandbox cgroups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbed.sandbox.cgroups import PARENT, detect_layout

pytestmark = pytest.mark.slow  # real processes and schedulers: left out by make test-fast

ROOT = Path(__file__).resolve().parents[2]


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (by parent pid, read from /proc)."""
    parents: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def owned_cgroups(pids: set[int]) -> list[Path]:
    layout, _ = detect_layout()
    mounts = ([layout.v2] if layout.v2 else []) + layout.v1_dirs
    return [d for m in mounts if (m / PARENT).is_dir() for d in (m / PARENT).iterdir()
            if d.name.split("-", 1)[0].isdigit() and int(d.name.split("-", 1)[0]) in pids]  # fmt: skip


def test_sigkill_of_benchbed_during_a_ref_run_takes_the_engine_with_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    benchbed = subprocess.Popen(
        [sys.executable, "-m", "benchbed", "run", ROOT / "benchbed" / "data" / "ref-demo.toml", "--set",
         "workload.steps=200", "--store", tmp_path / "store"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline, engine = time.monotonic() + 240, set()
        while time.monotonic() < deadline and len(engine) < 3:  # the engine and its trainer and generator
            time.sleep(0.5)
            engine = {p for p in descendants(benchbed.pid) if "benchbed.launch.watchdog" not in _cmdline(p)}
            engine = {p for p in engine if _cmdline(p).startswith(sys.executable) or "ref-" in _comm(p)}
        assert len(engine) >= 3, f"the engine did not start: {engine}"
        time.sleep(5)  # rollouts under way, sandboxes up
        os.kill(benchbed.pid, signal.SIGKILL)
        benchbed.wait()
        deadline = time.monotonic() + 180  # 61 sandbox cgroups took over 60 s to go on a loaded 2-core machine
        while time.monotonic() < deadline and (any(running(p) for p in engine) or owned_cgroups(engine)):
            time.sleep(0.5)
        assert [p for p in engine if running(p)] == []
        assert owned_cgroups(engine) == []
    finally:
        if benchbed.poll() is None:
            os.killpg(benchbed.pid, signal.SIGKILL)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
