"""Bytes a framework never writes, where its files are expected: one line naming the file and line (exit 2) or a
warning naming them, never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"


def ingest(run: Path, adapter: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchbed", "ingest", str(run), "--adapter", adapter, "--store",
                           str(store), "--json"], capture_output=True, text=True, timeout=300)  # fmt: skip


def spoil(path: Path, at: int) -> int:
    """Write 0xff (never UTF-8) at byte `at` of the file; the line it lands on."""
    data = path.read_bytes()
    path.write_bytes(data[:at] + b"\xff" + data[at:])
    return data.count(b"\n", 0, at) + 1


def test_a_trl_state_file_that_is_not_utf8_is_one_line_with_its_line(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURES / "trl" / "grpo-spg2-sandbox", tmp_path / "run")
    line = spoil(run / "trainer_state.json", 500)
    done = ingest(run, "trl", tmp_path / "store")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"benchbed: error: {run / 'trainer_state.json'}:{line}: not UTF-8 text (byte 0xff at offset 500); "
        "expected the UTF-8 its framework writes"
    ]
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob("record.json"))


def test_an_areal_config_that_is_not_utf8_is_a_warning_and_the_spans_are_kept(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURES / "areal" / "grpo-async-6x8", tmp_path / "run")
    line = spoil(run / "config.yaml", 100)
    done = ingest(run, "areal", tmp_path / "store")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert f"{run / 'config.yaml'}:{line}: not UTF-8 text (byte 0xff at offset 100)" in "\n".join(record["warnings"])
    assert record["metrics"]["trainer_idle_ratio"] is not None


def test_a_jsonl_line_nested_200000_deep_is_skipped_by_line(tmp_path: Path) -> None:
    run = shutil.copytree(FIXTURES / "verl" / "verl-0.9.1-v1_sync", tmp_path / "run")
    whole = json.loads(ingest(FIXTURES / "verl" / "verl-0.9.1-v1_sync", "verl", tmp_path / "a").stdout)
    lines = (run / "metrics.jsonl").read_text().count("\n")
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write('{"a":' + "[" * 200_000 + "]" * 200_000 + "}\n")
    done = ingest(run, "verl", tmp_path / "b")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    skipped = f"{run / 'metrics.jsonl'}:{lines + 1}: skipped line that is not JSON (ValueError: nested deeper"
    assert skipped in "\n".join(record["warnings"])
    assert record["metrics"] == whole["metrics"]


def test_a_slime_log_with_only_the_rollout_side_is_partial_and_says_why(tmp_path: Path) -> None:
    """The rollout manager's `perf 0:` line alone (no trainer `perf/train_wait_time`): no metric can be computed,
    so the run is stored partial with the reason, never `succeeded` with no metrics."""
    log = FIXTURES / "slime" / "sync_colocated_624b824" / "run.log"
    rollout = [line for line in log.read_text().splitlines() if "perf 0:" in line and "train_wait" not in line]
    (tmp_path / "rollout.log").write_text(rollout[0] + "\n")
    done = ingest(tmp_path / "rollout.log", "slime", tmp_path / "store")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "partial" and record["metrics"] == {}
    assert "no metric could be computed: no trainer step was read" in "\n".join(record["warnings"])
