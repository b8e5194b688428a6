"""SIGTERM and SIGHUP take the Ctrl-C path in the local launcher (benchbed.launch.signals)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from benchbed.adapter import LaunchPlan
from benchbed.launch.local import run_plan
from benchbed.launch.signals import Terminated, interrupt_for, signal_name, stop_signals_interrupt


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_kills_the_launched_group_and_is_named(tmp_path: Path, sig: signal.Signals) -> None:
    plan = LaunchPlan(argv=["bash", "-c", "sleep 300 & echo $! > child.pid; wait"], timeout_s=60)
    previous = signal.getsignal(sig)
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), sig))
    timer.start()
    with stop_signals_interrupt():  # what LocalLauncher.launch wraps run_plan in
        result = run_plan(plan, tmp_path)
    timer.join()
    assert result.interrupted and result.stop_signal == sig.name and not result.ok
    child = int((tmp_path / "child.pid").read_text())
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"
    assert signal.getsignal(sig) is previous  # the handler is restored afterwards


def test_the_hook_for_other_launchers() -> None:
    with pytest.raises(Terminated) as info, stop_signals_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handler runs between bytecodes, here
            time.sleep(0.01)
    assert isinstance(info.value, KeyboardInterrupt) and signal_name(info.value) == "SIGTERM"
    assert isinstance(interrupt_for("SIGHUP"), Terminated) and type(interrupt_for("SIGINT")) is KeyboardInterrupt
