"""Reading tracker histories (issue 19): a W&B offline run and an MLflow store of 10,000 steps x 200 keys each, read
within 1.5x of the tracker library's own fastest way to dump that history, measured here in the same run:
- W&B: `wandb-core leet inspect -json`, wandb's own dump of a run's record log (the binary the wandb package ships,
  started directly, telemetry off); reading the records with wandb's Record type and nothing else is reported too;
- MLflow: `MlflowClient.get_metric_history` for every key of the run (SQLite store), mlflow's own per-key dump and
  its fastest: mlflow 3.17's client has no call that dumps a run's histories at once (the SQL store's
  `get_metric_history_bulk` is per key too, over several runs, and slower; `get_metric_history_bulk_interval` samples).
Both inputs are written by the real libraries (wandb offline in a child process; an MLflow store made by mlflow's
client, its points in mlflow's own metrics table, see write_mlflow_run)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ratios import PRINT_PEAK_RSS_KIB, baseline_median, median_of, ratio

from benchbed.adapterkit.histories import open_history
from benchbed.adapterkit.histories.wandb_file import chunks, find_wandb_file

pytest.importorskip("wandb", reason="the `wandb` extra is not installed")
pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed")

ROUNDS = 3
MLFLOW_ROUNDS = 1  # mlflow's own per-key dump of a 10,000 x 200 SQLite run takes a minute or two on 2 cores
KEYS = 200
LIMIT = 1.5
# Peak memory of a read, over the same process's peak with the store opened and nothing read, at most this many
# times the history's own size (the frame: steps x keys doubles): bounded by the history, not the files.
PEAK_OVER_HISTORY = 12.0
WRITE_WANDB = """
import sys, wandb
steps, keys, root = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
run = wandb.init(project="bench", dir=root, settings=wandb.Settings(x_disable_stats=True))
for s in range(steps):
    run.log({f"timing_s/k{j}": s * 0.5 + j for j in range(keys)}, step=s)
print(run.dir)
run.finish()
"""


@pytest.fixture(scope="module")
def steps(quick: bool) -> int:
    return 1_000 if quick else 10_000


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory: pytest.TempPathFactory, steps: int) -> Path:
    root = tmp_path_factory.mktemp("wandb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")} | {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB_CONSOLE": "off",
    }
    done = subprocess.run([sys.executable, "-c", WRITE_WANDB, str(steps), str(KEYS), str(root)], env=env,
                          capture_output=True, text=True, check=True, timeout=1800)  # fmt: skip
    return Path(done.stdout.strip().splitlines()[-1]).parent


def _point(step: int, key: int) -> tuple[str, float, int, int]:
    """(key, value, timestamp ms, step) of one logged point."""
    return f"timing_s/k{key}", step * 0.5 + key, 1_700_000_000_000 + step, step


def write_mlflow_run(uri: str, steps: int, keys: int) -> str:
    """The id of a run of `steps` x `keys` points in a store that mlflow's client creates. Every step but the last goes
    into mlflow's own metrics table (its SQLAlchemy model, step by step as a training loop logs, one transaction):
    `log_batch` takes at most 1,000 points a call and builds an ORM object per point, about 0.3 ms a point here, ten
    minutes and more for 2,000,000. The last step is logged with `log_batch`, which also writes the run's latest
    values. test_the_mlflow_store_writer_writes_what_log_batch_writes checks the rows are the ones log_batch writes."""
    from mlflow.entities import Metric
    from mlflow.store.tracking.dbmodels.models import SqlMetric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("bench")).info.run_id
    columns = ("key", "value", "timestamp", "step")
    with client._tracking_client.store.engine.begin() as connection:
        for start in range(0, steps - 1, 100):
            rows = [dict(zip(columns, _point(s, j), strict=True), is_nan=False, run_uuid=run_id)
                    for s in range(start, min(start + 100, steps - 1)) for j in range(keys)]  # fmt: skip
            connection.execute(SqlMetric.__table__.insert(), rows)
    client.log_batch(run_id, metrics=[Metric(*_point(steps - 1, j)) for j in range(keys)])
    return run_id


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory, steps: int) -> str:
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    return f"{uri}#{write_mlflow_run(uri, steps, KEYS)}"


def _store_rows(uri: str) -> tuple[list[tuple], list[tuple]]:
    """The metrics and latest_metrics rows of a store's only run, without the run id."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(uri.removeprefix("sqlite:///"))) as db:
        query = "SELECT key, value, timestamp, step, is_nan FROM {} ORDER BY key, step, timestamp"
        return db.execute(query.format("metrics")).fetchall(), db.execute(query.format("latest_metrics")).fetchall()


def test_the_mlflow_store_writer_writes_what_log_batch_writes(tmp_path: Path) -> None:
    """The benchmark's store holds the rows a training loop's `log_batch` calls write, and nothing else."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    ours = f"sqlite:///{tmp_path / 'ours.db'}"
    write_mlflow_run(ours, 7, 3)
    theirs = f"sqlite:///{tmp_path / 'theirs.db'}"
    client = MlflowClient(tracking_uri=theirs)
    run_id = client.create_run(client.create_experiment("bench")).info.run_id
    for s in range(7):
        client.log_batch(run_id, metrics=[Metric(*_point(s, j)) for j in range(3)])
    metrics, latest = _store_rows(ours)
    assert (metrics, latest) == _store_rows(theirs) and len(metrics) == 21 and len(latest) == 3


def _leet_inspect(run_dir: Path) -> int:
    import wandb

    core = Path(wandb.__file__).parent / "bin" / "wandb-core"
    wandb_file = find_wandb_file(run_dir)
    out = subprocess.run([str(core), "leet", "inspect", "-no-observability", "-json", "-run-file", str(wandb_file),
                          str(run_dir.parent)], capture_output=True, check=True)  # fmt: skip
    return sum(1 for line in out.stdout.splitlines() if b'"type":"history"' in line)


def _records_only(run_dir: Path) -> int:
    from wandb.proto.wandb_internal_pb2 import Record

    wandb_file = find_wandb_file(run_dir)
    assert wandb_file is not None
    entries, _ = chunks(wandb_file.read_bytes(), wandb_file, [])
    record = Record()
    for raw in entries:
        record.ParseFromString(raw)
    return len(entries)


def _metric_histories(location: str) -> int:
    from mlflow.tracking import MlflowClient

    uri, run_id = location.split("#")
    client = MlflowClient(tracking_uri=uri)
    return sum(len(client.get_metric_history(run_id, k)) for k in client.get_run(run_id).data.metrics)


def test_wandb_leet_inspect(benchmark, wandb_run: Path, steps: int, medians: dict[str, float]) -> None:
    assert benchmark.pedantic(_leet_inspect, args=(wandb_run,), rounds=ROUNDS, iterations=1) == steps
    medians["wandb leet inspect -json"] = median_of(benchmark)


def test_wandb_records_only(benchmark, wandb_run: Path, medians: dict[str, float]) -> None:
    assert benchmark.pedantic(_records_only, args=(wandb_run,), rounds=ROUNDS, iterations=1) > 0
    medians["wandb Record.ParseFromString only"] = median_of(benchmark)


def test_wandb_offline_history(benchmark, wandb_run: Path, steps: int, medians: dict[str, float]) -> None:
    history = benchmark.pedantic(open_history, args=(wandb_run,), rounds=ROUNDS, iterations=1)
    assert history.frame.shape == (steps, KEYS + 2)
    assert history.frame[f"timing_s/k{KEYS - 1}"].iloc[-1] == (steps - 1) * 0.5 + KEYS - 1
    seconds = median_of(benchmark)
    name = f"W&B offline history, {steps:,} x {KEYS}"
    ratio(name, seconds, "wandb leet inspect -json", baseline_median(medians, "wandb leet inspect -json"), LIMIT)
    only = baseline_median(medians, "wandb Record.ParseFromString only")
    ratio(name, seconds, "wandb Record.ParseFromString only", only, None)


def test_mlflow_metric_histories(benchmark, mlflow_store: str, steps: int, medians: dict[str, float]) -> None:
    assert benchmark.pedantic(_metric_histories, args=(mlflow_store,), rounds=MLFLOW_ROUNDS, iterations=1) == (
        steps * KEYS)  # fmt: skip
    medians["mlflow get_metric_history per key"] = median_of(benchmark)


def test_mlflow_history(benchmark, mlflow_store: str, steps: int, medians: dict[str, float]) -> None:
    history = benchmark.pedantic(open_history, args=(mlflow_store,), rounds=MLFLOW_ROUNDS, iterations=1)
    assert history.frame.shape == (steps, KEYS + 2)
    baseline = baseline_median(medians, "mlflow get_metric_history per key")
    ratio(f"MLflow history, {steps:,} x {KEYS}", median_of(benchmark), "mlflow get_metric_history per key",
          baseline, LIMIT)  # fmt: skip


PEAK = f"""
import sys
import numpy, pandas, wandb.proto.wandb_internal_pb2, mlflow.tracking
from benchbed.adapterkit.histories import open_history
from benchbed.adapterkit.histories import wandb_file, mlflow_runs
if sys.argv[2] == "open" and "#" in sys.argv[1]:  # an MLflow store opened and its run looked up, no history read
    uri, run_id = mlflow_runs.split_location(sys.argv[1])
    mlflow.tracking.MlflowClient(tracking_uri=uri).get_run(run_id)
history = open_history(sys.argv[1]) if sys.argv[2] == "read" else None
print(0 if history is None else int(history.frame.memory_usage(deep=True).sum()))
{PRINT_PEAK_RSS_KIB}
"""


def _peak_kib(location: str, what: str) -> tuple[int, int]:
    """(history bytes, peak RSS KiB) of a fresh process that imports the readers and, for "open", opens the store
    (MLflow: its client and the run's record; a fixed cost, whatever the history), for "read", reads `location`."""
    out = subprocess.run([sys.executable, "-c", PEAK, location, what], check=True, capture_output=True, text=True)
    history_bytes, peak = out.stdout.split()[-2:]
    return int(history_bytes), int(peak)


@pytest.mark.parametrize("source", ["wandb", "mlflow"])
def test_history_peak_memory_is_bounded_by_the_history(source: str, request: pytest.FixtureRequest) -> None:
    """The read alone in a fresh process (VmHWM), less the peak of the same process that opened the store and read
    no history."""
    location = str(request.getfixturevalue("wandb_run" if source == "wandb" else "mlflow_store"))
    _, before = _peak_kib(location, "open")
    history_bytes, after = _peak_kib(location, "read")
    extra = (after - before) * 1024
    print(json.dumps({f"{source}_history_read_peak_extra_mib": round(extra / 2**20, 1),
                      f"{source}_history_frame_mib": round(history_bytes / 2**20, 1)}))  # fmt: skip
    assert history_bytes > 0 and extra <= PEAK_OVER_HISTORY * history_bytes
