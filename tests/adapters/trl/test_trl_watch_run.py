"""`benchbed run experiments/trl-grpo-cpu.toml --watch` of a real TRL run on the CPU: a line for each step as it
finishes, and final figures equal to the ones `benchbed ingest` computes from the finished run directory."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="TRL is not installed (pip install 'benchbed[trl]')")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[3]
STEP = re.compile(r"^watch step=(\d+) step_s=(\S+) trainer_idle=(\S+) generator_idle=(\S+) staleness_mean=(\S+) "
                  r"staleness_max=(\S+) throughput_sps=(\S+) zero_adv=(\S+) gpu_busy=\S+ regime=\w+$")  # fmt: skip
STEPS = 4


def benchbed(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchbed", *map(str, args)], capture_output=True, text=True,
                          timeout=500)  # fmt: skip


def test_run_watch_of_trl_updates_each_step_and_ends_on_the_post_hoc_figures(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ran = benchbed("run", ROOT / "experiments" / "trl-grpo-cpu.toml", "--set", f"workload.steps={STEPS}", "--watch",
                   "--interval", "0.2", "--store", store, "--json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout)
    lines = [STEP.match(line) for line in ran.stderr.splitlines() if line.startswith("watch step=")]
    assert all(lines) and [int(m.group(1)) for m in lines] == list(range(1, STEPS + 1))  # each step, once, in order
    run_dir = next(store.glob(f"*/trl/{record['spec_id']}/*"))
    ingested = benchbed("ingest", run_dir, "--adapter", "trl", "--store", tmp_path / "again", "--json")
    assert ingested.returncode == 0, ingested.stderr
    post_hoc = {name: m["value"] for name, m in json.loads(ingested.stdout)["metrics"].items()}
    watched = {name: m["value"] for name, m in record["metrics"].items()}
    assert watched.keys() >= post_hoc.keys()
    assert {name: watched[name] for name in post_hoc} == post_hoc  # the figures run --watch ends on, exactly
    last = lines[-1]  # the live view's last line: the metric window's figures after the last step (6 digits)
    assert float(last.group(3)) == pytest.approx(post_hoc["trainer_idle_ratio"], rel=1e-5)
    assert 1 - float(last.group(4)) == pytest.approx(post_hoc["generator_utilization"], rel=1e-4, abs=1e-5)
    assert float(last.group(5)) == pytest.approx(post_hoc["staleness_mean"], rel=1e-5)
    assert float(last.group(5)) == pytest.approx(2 / 3)  # steps 2-4 train slices 1, 0, 1 of their batch
    assert float(last.group(6)) == post_hoc["staleness_max"] == 1.0
    assert float(last.group(7)) == pytest.approx(post_hoc["trainer_throughput_sps"], rel=1e-5)
    assert float(last.group(8)) == pytest.approx(post_hoc["zero_adv_group_fraction"], rel=1e-5)
