"""Hostile programs in the local sandbox: each contained with the reason recorded, the host responsive, and
the pool serving the next sandbox; nothing left behind (checked by the no_leaks fixture)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time

import pytest

from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink
from benchbed.sandbox.local import LocalBackend
from benchbed.sandbox.pool import PoolConfig, SandboxOutcome, SandboxPool

pytestmark = pytest.mark.usefixtures("no_leaks")

SPEC = SandboxSpec(memory_mb=128, pids_max=64, disk_mb=32, max_files=2000, output_limit_bytes=64 * 1024)
PY = "/usr/bin/python3"


def run_hostile(local_caps, argv: list[str], timeout_s: float = 3.0, spec: SandboxSpec = SPEC,
                during=None) -> tuple[SandboxOutcome, SandboxOutcome, object]:  # fmt: skip
    """Run the hostile argv, then a benign one in the same pool; `during` runs on the host meanwhile."""

    async def main():
        async with SandboxPool(LocalBackend(local_caps), PoolConfig(max_starting=4), EventSink()) as pool:
            task = asyncio.ensure_future(pool.run(spec, argv, timeout_s=timeout_s))
            probe = await asyncio.to_thread(during) if during else None
            bad = await task
            good = await pool.run(spec, ["/bin/echo", "next"], timeout_s=10)
            return bad, good, probe

    bad, good, probe = asyncio.run(main())
    assert good.result is not None and good.result.ok and good.result.stdout == b"next\n", good
    return bad, good, probe


def host_probe() -> float:
    """Spawn /bin/true on the host a few times while the hostile program runs; the slowest spawn (s)."""
    time.sleep(0.5)
    worst = 0.0
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(["/bin/true"], check=True, timeout=30)
        worst = max(worst, time.perf_counter() - t)
        time.sleep(0.1)
    return worst


def test_million_files_hits_inode_cap(local_caps):
    prog = "import os\nfor i in range(10**6):\n    open(f'f{i}', 'w').close()\n"
    bad, _, _ = run_hostile(local_caps, [PY, "-c", prog], timeout_s=20)
    res = bad.result
    assert res.exit_code == 1 and res.limit == "disk"
    assert b"No space left on device" in res.stderr


def test_fork_bomb_hits_pids_cap_and_host_stays_responsive(local_caps):
    prog = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    bad, _, worst = run_hostile(local_caps, [PY, "-c", prog], timeout_s=3, during=host_probe)
    res = bad.result
    assert res.reason == "exec_timeout"
    assert "process cap 64 reached" in res.message
    assert worst < 10.0  # the host still spawns processes (bound is loose: no timing claims here)


def test_shell_fork_bomb(local_caps):
    bad, _, _ = run_hostile(local_caps, ["/bin/sh", "-c", "f() { f | f & }; f; sleep 5"], timeout_s=2)
    # Either the deadline ends it or the top shell itself gives up ("Cannot fork"); the pids cap fired either way.
    assert bad.result.limit in ("wall", "pids")
    assert "process cap 64 reached" in bad.result.message


def test_unbounded_memory_is_oom_killed(local_caps):
    prog = "a = []\nwhile True:\n    a.append(bytearray(1 << 20))\n"
    bad, _, _ = run_hostile(local_caps, [PY, "-c", prog], timeout_s=20)
    assert bad.result.reason == "oom" and bad.result.limit == "memory"
    assert bad.result.exit_code == 137


def test_infinite_cpu_loop_hits_wall_clock(local_caps):
    bad, _, _ = run_hostile(local_caps, [PY, "-c", "while True: pass"], timeout_s=1.5)
    assert bad.result.reason == "exec_timeout" and bad.result.limit == "wall"
    assert bad.result.wall_s >= 1.5  # it ran to its limit; the reason and limit say the clock stopped it


def test_sleep_forever(local_caps):
    bad, _, _ = run_hostile(local_caps, ["/bin/sleep", "infinity"], timeout_s=1)
    assert bad.result.reason == "exec_timeout" and bad.result.limit == "wall"


def test_double_forked_daemon_ignoring_sigterm_is_killed_on_close(local_caps):
    prog = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        os.close(1); os.close(2)\n"
        "        while True: time.sleep(1)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print('daemonized')\n"
    )
    bad, _, _ = run_hostile(local_caps, [PY, "-c", prog], timeout_s=10)
    assert bad.result.ok and bad.result.stdout == b"daemonized\n"
    # no_leaks asserts the daemon is gone after close


def test_stdout_flood_is_capped_and_killed(local_caps):
    bad, _, _ = run_hostile(local_caps, ["/usr/bin/yes"], timeout_s=20)
    res = bad.result
    assert res.limit == "output" and res.truncated
    assert len(res.stdout) == SPEC.output_limit_bytes  # killed at the cap (limit "output"), not by the deadline


def test_network_is_unreachable_including_loopback_of_host(local_caps):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.1)
    port = server.getsockname()[1]
    prog = (
        "import socket\n"
        f"s = socket.socket(); s.settimeout(2)\n"
        "try:\n"
        f"    s.connect(('127.0.0.1', {port})); print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('blocked', e.errno)\n"
        "print(open('/proc/net/dev').read())\n"
    )
    try:
        bad, _, _ = run_hostile(local_caps, [PY, "-c", prog], timeout_s=10)
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    out = bad.result.stdout.decode()
    assert "CONNECTED" not in out and "blocked" in out
    interfaces = [line.split(":")[0].strip() for line in out.splitlines()[3:] if ":" in line]
    assert interfaces == ["lo"]


def test_host_files_and_environment_are_invisible(local_caps, monkeypatch, tmp_path):
    secret = "s3cret-value-for-benchbed-test"
    monkeypatch.setenv("BENCHBED_TEST_API_KEY", secret)
    (tmp_path / "host.txt").write_text("host file")
    script = (
        "env; cat /proc/1/environ /proc/self/environ; ls / /root /home /work; cat /etc/shadow /etc/passwd; "
        f"cat {tmp_path}/host.txt; ls /proc /sys; cat /proc/1/cmdline; hostname; echo done"
    )
    bad, _, _ = run_hostile(local_caps, ["/bin/sh", "-c", script], timeout_s=10)
    out = bad.result.stdout + bad.result.stderr
    assert secret.encode() not in out
    assert b"host file" not in out
    assert b"root:" not in out  # neither /etc/shadow nor /etc/passwd is visible
    assert bad.result.stdout.endswith(b"sandbox\ndone\n")  # not the host's name
    listing = bad.result.stdout.decode().split("\n\n")[0]
    assert "root" not in listing.split() and "work" not in listing.split()


def test_writes_outside_workdir_fail(local_caps):
    marker = f"/tmp/benchbed-escape-{os.getpid()}"
    script = (
        f"for p in /x /usr/x /etc/x /proc/x /dev/x /bin/x {marker}.abs; do "
        "  if touch $p 2>/dev/null; then echo WROTE $p; fi; done; "
        "touch inside && echo inside-ok; df -i /tmp | tail -1"
    )
    bad, _, _ = run_hostile(local_caps, ["/bin/sh", "-c", script], timeout_s=10)
    out = bad.result.stdout.decode()
    assert "WROTE" not in out.replace(f"WROTE {marker}.abs", "")
    assert "inside-ok" in out
    assert not os.path.exists(f"{marker}.abs")  # /tmp inside is the sandbox's own tmpfs


def test_nested_user_namespaces_and_mounts_fail(local_caps):
    script = (
        "unshare -Ur true && echo USERNS; unshare -m true && echo MOUNTNS; "
        "mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED; "
        "unshare -Urm sh -c 'mount -t tmpfs -o size=1g x /tmp && echo BIGTMP'; echo done"
    )
    bad, _, _ = run_hostile(local_caps, ["/bin/sh", "-c", script], timeout_s=10)
    out = bad.result.stdout.decode()
    for word in ("USERNS", "MOUNTNS", "MOUNTED", "BIGTMP"):
        assert word not in out
    assert out.endswith("done\n")


def test_sandbox_lifetime_kills_a_persistent_sandbox(local_caps):
    spec = SPEC.model_copy(update={"lifetime_s": 1.0})
    bad, _, _ = run_hostile(local_caps, ["/bin/sleep", "30"], timeout_s=20, spec=spec)
    assert bad.result.reason == "lifetime_timeout"
