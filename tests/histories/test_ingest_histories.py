"""`benchbed ingest PATH_OR_URI` on tracker histories: the adapter found from the keys, the source recorded without
credentials, and bad input as one line, exit 2, nothing stored."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures"
RUN = FIXTURES / "histories" / "verl" / "verl-0.9.1-v1_sync"

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")


def test_a_wandb_run_is_ingested_without_naming_the_adapter(benchbed, tmp_path: Path) -> None:
    (run_dir,) = (RUN / "wandb").glob("offline-run-*")
    done = benchbed("ingest", run_dir, "--store", tmp_path / "results", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["adapter"]["name"], record["adapter"]["mode"], record["adapter"]["version"]) == (
        "verl", "v1_sync", "0.9.1")  # fmt: skip
    assert record["spec"]["source"] == str((run_dir / f"run-{run_dir.name.rsplit('-', 1)[1]}.wandb").resolve())
    (stored,) = [p for p in (tmp_path / "results").rglob("native") if p.is_dir()]
    assert (stored / "history.parquet").is_file() and (stored / "files" / "requirements.txt").is_file()


def test_a_history_no_adapter_recognises_names_its_keys(benchbed, tmp_path: Path, wandb_run) -> None:
    run_dir = wandb_run({"rows": [{"step": 1, "data": {"loss": 0.5}}]}, tmp_path / "w")
    done = benchbed("ingest", run_dir, "--store", tmp_path / "results")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("no adapter recognises it (keys: loss); name one with --adapter")
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "results").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_mlflow_server_is_one_line_and_keeps_the_password_out(benchbed_process, tmp_path: Path) -> None:
    pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed")
    url = f"http://reader:hunter2-secret@127.0.0.1:{_closed_port()}/#/experiments/0/runs/{'a' * 32}"
    # a child: the MLflow client's request thread outlives the 30 s wait, and the process's end is what stops it
    done = benchbed_process("ingest", url, "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "hunter2-secret" not in line and "reader" not in line
    assert "MLflow tracking store did not answer within 30 s" in line and "http://127.0.0.1:" in line
    assert not (tmp_path / "results").exists()


def test_a_missing_path_is_named_and_a_non_history_needs_an_adapter(benchbed, tmp_path: Path) -> None:
    done = benchbed("ingest", tmp_path / "nope", "--store", tmp_path / "results")
    assert done.returncode == 2 and f"{tmp_path / 'nope'}: no such file or directory" in done.stderr
    (tmp_path / "console.log").write_text("step 1 done\n")
    done = benchbed("ingest", tmp_path / "console.log", "--store", tmp_path / "results")
    assert done.returncode == 2 and "console.log: not a tracker history, and no adapter's console format (" in (
        done.stderr) and "recognises it; name the framework that wrote it with --adapter" in done.stderr  # fmt: skip
    assert not (tmp_path / "results").exists()


def test_a_wandb_file_cut_before_its_first_step_is_named_as_damaged(benchbed, tmp_path: Path) -> None:
    (record_log,) = (RUN / "wandb").glob("offline-run-*/run-*.wandb")
    cut = tmp_path / record_log.name
    cut.write_bytes(record_log.read_bytes()[:3000])
    done = benchbed("ingest", cut, "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"benchbed: error: {cut}: damaged at byte ") and "nothing to measure" in line
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("record.json"))


def test_an_infinite_timing_names_the_store_the_run_the_key_and_the_step(
    benchbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("benchbed")).info.run_id
    rows = [(s, {"timing_s/step": 2.0, "timing_s/gen": 1.0}) for s in (1, 2)] + [(3, {"timing_s/step": float("inf")})]
    client.log_batch(run_id, metrics=[Metric(k, v, 1000 * s, s) for s, row in rows for k, v in row.items()])
    done = benchbed("ingest", tmp_path / "mlruns", "--adapter", "verl", "--store", tmp_path / "results")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"(run {run_id}): timing_s/step = inf at step(s) 3: trainer.step is a duration" in line
    assert str(tmp_path / "mlruns") in line
