"""A real `mlflow server` on 127.0.0.1 (SQLite behind it), started here: a verl history logged to it through
mlflow's client is ingested from the address the MLflow UI shows, to the figures of the file store it came from."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import open_history

pytestmark = pytest.mark.slow  # real processes and schedulers: left out by make test-fast

pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")
STORE = Path(__file__).parents[1] / "fixtures" / "histories" / "verl" / "verl-0.9.1-v1_sync" / "mlruns"


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`mlflow server` in its own process group; stopped (the whole group) when the module's tests are done."""
    root = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mlflow = Path(sys.executable).with_name("mlflow")
    log = (root / "server.log").open("w")
    server = subprocess.Popen(
        [str(mlflow), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}", "--default-artifact-root", str(root / "art")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def test_a_run_on_a_live_server_reads_as_the_store_it_came_from(
    mlflow_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    original = open_history(STORE)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    stored_params = MlflowClient(tracking_uri=STORE.as_uri()).get_run(original.source.run_id).data.params
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.create_experiment("benchbed")
    run_id = client.create_run(experiment).info.run_id
    metrics = [Metric(k, v, int(t * 1000), s) for s, t, row in original.rows() for k, v in row.items()]
    params = [Param(k, v) for k, v in sorted(stored_params.items())]
    for i in range(0, len(params), 100):
        client.log_batch(run_id, params=params[i : i + 100])
    for i in range(0, len(metrics), 500):
        client.log_batch(run_id, metrics=metrics[i : i + 500])
    address = f"{mlflow_server}/#/experiments/{experiment}/runs/{run_id}"
    history = open_history(address)
    assert history.source.uri == f"{mlflow_server}#{run_id}" and history.source.tracker == "mlflow"
    assert list(history.frame["step"]) == list(original.frame["step"])
    reference = VerlAdapter().parse(STORE)
    done = subprocess.run([sys.executable, "-m", "benchbed", "ingest", address, "--store", tmp_path / "results",
                           "--json"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["adapter"]["name"] == "verl" and record["spec"]["source"] == f"{mlflow_server}#{run_id}"
    trace = VerlAdapter().parse_history(history)
    keys = set(reference.events["key"])
    ours = trace.events[trace.events["key"].isin(keys)].sort_values(["key", "step"])["value"].tolist()
    theirs = reference.events[reference.events["key"].isin(keys)].sort_values(["key", "step"])["value"].tolist()
    assert ours == pytest.approx(theirs, rel=1e-12, nan_ok=True)


def test_a_run_the_live_server_does_not_have_is_one_line_and_exit_2(mlflow_server: str, tmp_path: Path) -> None:
    address = f"{mlflow_server}/#/experiments/0/runs/{'0' * 32}"
    done = subprocess.run([sys.executable, "-m", "benchbed", "ingest", address, "--adapter", "verl", "--store",
                           tmp_path / "results"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"{mlflow_server}: MLflow run {'0' * 32}: " in done.stderr and not (tmp_path / "results").exists()
