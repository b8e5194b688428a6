"""`benchbed ingest DIR` on a directory holding several runs lists them (exit 2, nothing stored) or, with --all,
ingests each; it never picks one of them silently."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchbed.errors import BenchbedError
from benchbed.pipeline import SeveralRunsError, find_runs, ingest
from benchbed.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def two_verl_runs(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for name in ("verl-0.9.1-v0", "verl-0.9.1-v1_sync-notiming"):
        shutil.copytree(FIXTURES / "verl" / name, root / "runs" / name)
    (root / "README.md").write_text("not a run\n")
    return root


def test_a_directory_with_several_runs_is_refused_with_their_list(
    benchbed, two_verl_runs: Path, tmp_path: Path
) -> None:
    store = tmp_path / "results"
    assert find_runs(two_verl_runs, "verl") == sorted((two_verl_runs / "runs").iterdir())
    with pytest.raises(SeveralRunsError, match=r"holds 2 verl runs; pass one of them, or --all") as caught:
        ingest(two_verl_runs, "verl", Store(store))
    assert caught.value.runs == sorted((two_verl_runs / "runs").iterdir())
    result = benchbed("ingest", two_verl_runs, "--adapter", "verl", "--store", store)
    assert result.returncode == 2 and "verl-0.9.1-v0" in result.stderr and "notiming" in result.stderr
    assert not store.exists() or not any(store.rglob("record.json"))


def test_all_ingests_each_run(benchbed, two_verl_runs: Path, tmp_path: Path) -> None:
    store = tmp_path / "results"
    result = benchbed("ingest", two_verl_runs, "--adapter", "verl", "--all", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert [r["spec"]["source"] for r in records] == [str(p) for p in sorted((two_verl_runs / "runs").iterdir())]
    assert len(list(store.rglob("record.json"))) == 2


def test_one_run_inside_a_directory_is_ingested_as_before(tmp_path: Path) -> None:
    run = FIXTURES / "verl" / "verl-0.9.1-v0"
    assert find_runs(run, "verl") == [run]
    assert ingest(run, "verl", Store(tmp_path)).record.status == "succeeded"
    with pytest.raises(BenchbedError, match="no such file or directory"):
        find_runs(tmp_path / "nowhere", "verl")
