"""`benchbed run SPEC --watch` of a real reference-engine run: a line for each step as it finishes, and final
figures equal to the ones `benchbed ingest` computes from the finished run directory."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .refrun import ROOT, engine_available

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
STEP = re.compile(r"^watch step=(\d+) step_s=(\S+) trainer_idle=(\S+) generator_idle=(\S+) staleness_mean=(\S+) "
                  r"staleness_max=\S+ throughput_sps=(\S+) zero_adv=\S+ gpu_busy=\S+ regime=\w+$")  # fmt: skip
STEPS = 4


def benchbed(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchbed", *map(str, args)], capture_output=True, text=True,
                          timeout=500)  # fmt: skip


def test_run_watch_updates_each_step_and_ends_on_the_post_hoc_figures(tmp_path: Path) -> None:
    engine_available()
    store = tmp_path / "store"
    ran = benchbed("run", ROOT / "experiments" / "ref-sync.toml", "--set", f"workload.steps={STEPS}", "--watch",
                   "--interval", "0.2", "--store", store, "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout)
    lines = [STEP.match(line) for line in ran.stderr.splitlines() if line.startswith("watch step=")]
    assert all(lines) and [int(m.group(1)) for m in lines] == list(range(1, STEPS + 1))  # each step, once, in order
    alarms = [line for line in ran.stderr.splitlines() if line.startswith("alarm ")]
    assert [w for w in record["warnings"] if w.startswith("alarm ")] == alarms  # the record keeps what fired
    run_dir = next(store.glob(f"*/ref/{record['spec_id']}/*"))
    ingested = benchbed("ingest", run_dir, "--adapter", "ref", "--store", tmp_path / "again", "--json")
    assert ingested.returncode == 0, ingested.stderr
    post_hoc = {name: m["value"] for name, m in json.loads(ingested.stdout)["metrics"].items()}
    watched = {name: m["value"] for name, m in record["metrics"].items()}
    assert watched.keys() >= post_hoc.keys()
    assert {name: watched[name] for name in post_hoc} == post_hoc  # the figures run --watch ends on, exactly
    last = lines[-1]  # the live view's last line: the metric window's figures after the last step
    assert float(last.group(3)) == pytest.approx(post_hoc["trainer_idle_ratio"], rel=1e-5)
    assert 1 - float(last.group(4)) == pytest.approx(post_hoc["generator_utilization"], rel=1e-4, abs=1e-5)
    assert float(last.group(5)) == post_hoc["staleness_mean"] == 0.0  # synchronous: every sample is fresh
    assert float(last.group(6)) == pytest.approx(post_hoc["trainer_throughput_sps"], rel=1e-5)
