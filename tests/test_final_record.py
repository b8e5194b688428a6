"""The final record is written whatever stops benchbed after the launch (a stop signal while the metrics are
computed, a disk that fills up during a nightly), and BENCHBED_MACHINE can never put runs outside --store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "experiments" / "quickstart.toml"


def records(store: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(store.glob("*/*/*/*/record.json"))]


STOPPED_WHILE_MEASURING = """
import os, signal, sys
import benchbed.pipeline as pipeline
from benchbed.cli.main import cli

measure = pipeline.compute_metrics

def measure_and_stop(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # a real SIGTERM, delivered while the metrics are being computed
    return measure(*args, **kwargs)

pipeline.compute_metrics = measure_and_stop
cli(["simulate", sys.argv[1], "--set", "workload.steps=10", "--store", sys.argv[2]], prog_name="benchbed")
"""


def test_sigterm_while_the_metrics_are_computed_leaves_a_final_record(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", STOPPED_WHILE_MEASURING, QUICKSTART, tmp_path],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("benchbed: error: interrupted by SIGTERM")
    [record] = records(tmp_path)
    assert record["status"] == "partial" and record["metrics"] == {}
    assert record["error"]["message"].startswith("benchbed was interrupted (SIGTERM) while computing the metrics")
    assert record["finished_at"] is not None


NIGHT = """
name = "cpu-mini"
[[entry]]
name = "async"
spec = "quickstart.toml"
repeats = 2
set = ["workload.steps=30", "sim.concurrency=128"]
"""


@pytest.fixture
def nearly_full(tmp_path: Path):
    """A 400 KiB tmpfs with 76 KiB left: room for one short simulated run, not two."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    store = tmp_path / "store"
    store.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(store)]).returncode:
        pytest.skip("this container may not mount a tmpfs")
    try:
        (store / "filler").write_bytes(b"\0" * 330_000)
        yield store
    finally:
        subprocess.run(["umount", "-l", str(store)], check=True)


def test_a_nightly_into_a_nearly_full_store_leaves_no_started_record(
    benchbed, tmp_path: Path, nearly_full: Path
) -> None:
    (tmp_path / "quickstart.toml").write_text(QUICKSTART.read_text())
    (tmp_path / "suite.toml").write_text(NIGHT)
    result = benchbed("nightly", tmp_path / "suite.toml", "--store", nearly_full, env={"BENCHBED_MACHINE": "ci-box"})
    assert result.returncode in (1, 2)
    found = records(nearly_full)
    assert [r["status"] for r in found] == ["succeeded", "failed"]
    assert "No space left on device" in found[1]["error"]["message"]
    assert result.stderr.strip().splitlines()[-1].startswith("benchbed: error: ")


@pytest.mark.parametrize("name", ["..", ".", "../escape", "/tmp/elsewhere", "a/b", "_catalog", ".hidden", ""])
def test_a_path_like_machine_name_is_refused_before_anything_is_stored(benchbed, tmp_path: Path, name: str) -> None:
    store = tmp_path / "inner" / "store"
    result = benchbed("simulate", QUICKSTART, "--set", "workload.steps=5", "--store", store,
                      env={"BENCHBED_MACHINE": name})  # fmt: skip
    if name == "":  # unset in effect: the hostname names the machine
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"benchbed: error: BENCHBED_MACHINE={name!r} is not a machine name; expected letters, digits, '.', '_' or "
        "'-', starting with a letter or digit (it names the machine's directory in the store)"
    )
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
