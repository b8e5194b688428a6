"""`benchbed watch` and `benchbed run --watch` as a user runs them: a line per step off a terminal, final figures
equal to `benchbed ingest`'s, /metrics served while the run runs, and one-line refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "fixtures" / "ref" / "async-4steps"
STEP = re.compile(r"^watch step=(\d+) step_s=\S+ trainer_idle=(\S+) .* regime=(\w+)$")


def benchbed(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchbed", *map(str, args)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_watch_prints_a_line_per_step_and_the_figures_ingest_computes(tmp_path: Path) -> None:
    watched = benchbed("watch", RUN, "--adapter", "ref", "--interval", "0.05", "--json")
    assert watched.returncode == 0, watched.stderr
    steps = [STEP.match(line) for line in watched.stderr.splitlines() if line.startswith("watch ")]
    assert [int(m.group(1)) for m in steps if m] == [1, 2, 3, 4]
    assert "alarm truncation: truncated_fraction 0.625 > 0.25" in watched.stderr
    final = json.loads(watched.stdout)
    ingested = benchbed("ingest", RUN, "--adapter", "ref", "--store", tmp_path / "store", "--json")
    assert ingested.returncode == 0, ingested.stderr
    assert final["metrics"] == json.loads(ingested.stdout)["metrics"]  # the same figures, every one, exactly
    assert float(steps[-1].group(2)) == pytest.approx(final["metrics"]["trainer_idle_ratio"]["value"], rel=1e-5)


def test_watch_serves_metrics_while_the_run_runs_and_ends_with_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    orchestrator = run / "events" / "orchestrator.jsonl"
    lines = orchestrator.read_text().splitlines(keepends=True)
    assert '"ev":"run_end"' in lines[-1]
    orchestrator.write_text("".join(lines[:-1]))  # the run has not ended yet
    cmd = [sys.executable, "-m", "benchbed", "watch", run, "--adapter", "ref", "--interval", "0.1",
           "--prometheus-port", "0", "--timeout", "60"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        address = re.match(r"prometheus: (http://127\.0\.0\.1:\d+/metrics)", proc.stderr.readline())
        assert address, "no /metrics address on stderr"
        body = ""
        for _ in range(100):
            with urllib.request.urlopen(address.group(1), timeout=5) as response:
                assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                body = response.read().decode()
            if re.search(r"^benchbed_step\{.*\} 4\.0$", body, re.M):  # every step of the log is read
                break
            time.sleep(0.1)
        labels = 'adapter="ref",framework="benchbed-ref",run="run",scope="run"'
        idle = re.search(r"^benchbed_trainer_idle_ratio\{" + re.escape(labels) + r"\} (\S+)$", body, re.M)
        assert idle and float(idle.group(1)) == pytest.approx(0.9667726, abs=1e-6)
        assert "# TYPE benchbed_trainer_idle_ratio gauge" in body
        assert re.search(r'^benchbed_alarm\{.*alarm="truncation".*\} 1\.0$', body, re.M)
        with orchestrator.open("a") as handle:
            handle.write(lines[-1])  # the run ends: the watcher prints the final figures and exits
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert "final figures" in out and re.search(r"trainer_idle_ratio\s+│\s+0\.9668", out)


def test_on_alarm_runs_the_command_with_the_alarm_in_its_environment(tmp_path: Path) -> None:
    out = tmp_path / "alarms.txt"
    command = f'printf "%s %s\\n" "$BENCHBED_ALARM" "$BENCHBED_ALARM_VALUE" >> {out}'
    watched = benchbed("watch", RUN, "--adapter", "ref", "--interval", "0.05", "--on-alarm", command, "--json")
    assert watched.returncode == 0, watched.stderr
    assert out.read_text() == "truncation 0.625\n"  # the one alarm the fixture fires, once


def test_a_run_that_does_not_end_within_the_timeout_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "trainer.jsonl").write_text("")
    waited = benchbed("watch", tmp_path, "--adapter", "ref", "--timeout", "0.3", "--interval", "0.1")
    assert waited.returncode == 2
    assert waited.stderr.strip().splitlines() == [
        f"benchbed: error: {tmp_path}: the run did not end within 0.3 s (--timeout)"
    ]


def test_refusals_are_one_line() -> None:
    no_adapter = benchbed("watch", RUN)
    assert no_adapter.returncode == 2
    assert no_adapter.stderr.strip().splitlines() == [
        f"benchbed: error: benchbed watch: {RUN}: no record.json here; name the framework that wrote it with "
        "--adapter (see benchbed watch --help)"
    ]
    quickstart = REPO / "experiments" / "quickstart.toml"
    unwatchable = benchbed("run", quickstart, "--watch")
    assert unwatchable.returncode == 2
    assert unwatchable.stderr.strip().splitlines() == [
        f"benchbed: error: {quickstart}: benchbed watch follows areal, example_history, miles, nemo_rl, open_instruct, "
        "openrlhf, prime_rl, ref, rllm, roll, skyrl, slime, tinker_cookbook, trl, verl runs live; the sim adapter's "
        "files are read once the run ends (benchbed ingest)"  # the adapters with a history parser: their histories
    ]
    port_alone = benchbed("run", quickstart, "--prometheus-port", "9")
    assert port_alone.returncode == 2 and "add --watch" in port_alone.stderr
