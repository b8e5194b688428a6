"""SIGTERM and SIGHUP take the Ctrl-C path in the local launcher (benchbed.launch.signals). Each signal is sent to a
child Python process that runs the launcher code, never to the test runner."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchbed.launch.signals import Terminated, interrupt_for

STOPPED_LAUNCH = textwrap.dedent("""
    import json, os, signal, sys, threading
    from pathlib import Path
    from benchbed.adapter import LaunchPlan
    from benchbed.launch.local import run_plan
    from benchbed.launch.signals import stop_signals_interrupt

    sig, work = signal.Signals[sys.argv[1]], Path(sys.argv[2])
    plan = LaunchPlan(argv=["bash", "-c", "sleep 300 & echo $! > child.pid; wait"], timeout_s=60)
    previous = signal.getsignal(sig)
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), sig))
    timer.start()
    with stop_signals_interrupt():  # what LocalLauncher.launch wraps run_plan in
        result = run_plan(plan, work)
    timer.join()
    print(json.dumps({"interrupted": result.interrupted, "stop_signal": result.stop_signal, "ok": result.ok,
                      "restored": signal.getsignal(sig) is previous}))
""")

HOOKED = textwrap.dedent("""
    import os, signal, time
    from benchbed.launch.signals import Terminated, signal_name, stop_signals_interrupt

    try:
        with stop_signals_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):  # the handler runs between bytecodes, here
                time.sleep(0.01)
    except Terminated as error:
        print(type(error).__name__, isinstance(error, KeyboardInterrupt), signal_name(error))
""")


def run_child(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_kills_the_launched_group_and_is_named(tmp_path: Path, sig: signal.Signals) -> None:
    outcome = json.loads(run_child(STOPPED_LAUNCH, sig.name, str(tmp_path)))
    assert outcome == {"interrupted": True, "stop_signal": sig.name, "ok": False, "restored": True}
    child = int((tmp_path / "child.pid").read_text())
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"


def test_the_hook_for_other_launchers() -> None:
    assert run_child(HOOKED).split() == ["Terminated", "True", "SIGTERM"]
    assert isinstance(interrupt_for("SIGHUP"), Terminated) and type(interrupt_for("SIGINT")) is KeyboardInterrupt
