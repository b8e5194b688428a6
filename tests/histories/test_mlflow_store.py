"""A SQLite store is read as columns through mlflow's own engine and metrics table, a file store through
`get_metric_history`: the same points logged by mlflow's client to both read to the same exact frame, with mlflow's
conventions kept (a step logged twice keeps its later value, NaN comes back as NaN, +inf as the largest float)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from benchbed.adapterkit.histories import open_history

pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")

POINTS = [  # key, value, timestamp ms, step
    ("a", 1.5, 1000, 0),
    ("b", -1.0, 1000, 0),
    ("a", 2.0, 2000, 1),
    ("a", 2.5, 3000, 1),
    ("a", math.nan, 4000, 2),
    ("b", math.inf, 5000, 2),
]


def _log(uri: str) -> str:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run_id = client.create_run(client.create_experiment("benchbed")).info.run_id
    client.log_batch(run_id, metrics=[Metric(k, v, t, s) for k, v, t, s in POINTS])
    return run_id


@pytest.mark.parametrize("store", ["sqlite", "file"])
def test_a_store_reads_to_the_logged_points(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}" if store == "sqlite" else (tmp_path / "mlruns").as_uri()
    run_id = _log(uri)
    calls: list[tuple[int, int]] = []
    history = open_history(f"{uri}#{run_id}", progress=lambda done, total: calls.append((done, total)))
    frame = history.frame
    assert list(frame["step"]) == [0, 1, 2] and list(frame["wall_time"]) == [1.0, 3.0, 5.0]
    assert frame["a"].tolist() == pytest.approx([1.5, 2.5, math.nan], nan_ok=True)
    assert frame["b"].tolist() == pytest.approx([-1.0, math.nan, sys.float_info.max if store == "sqlite" else math.inf],
                                                nan_ok=True)  # fmt: skip
    assert calls == [(1, 2), (2, 2)]


def test_a_sql_store_is_read_without_one_metric_object_per_point(tmp_path: Path) -> None:
    """The columns come from the metrics table: `get_metric_history` (one Metric per point) is not called."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = _log(uri)
    called: list[str] = []
    original = MlflowClient.get_metric_history

    def counted(self: MlflowClient, run: str, key: str) -> list:
        called.append(key)
        return original(self, run, key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MlflowClient, "get_metric_history", counted)
        assert open_history(f"{uri}#{run_id}").frame.shape == (3, 4)
    assert called == []


def test_a_missing_or_foreign_store_is_one_line_and_nothing_is_created_or_altered(benchbed, tmp_path: Path) -> None:
    """mlflow's client would create a missing store, or add its tables to another program's SQLite database."""
    import sqlite3

    from benchbed.adapterkit.histories import HistoryError

    missing = tmp_path / "gone" / "mlflow.db"
    with pytest.raises(HistoryError, match=r"^sqlite:///.*/gone/mlflow\.db: no MLflow store there \(no such file\)$"):
        open_history(f"sqlite:///{missing}")
    with pytest.raises(HistoryError, match=r"^file:///.*/mlruns: no MLflow file store there \(no such directory\)$"):
        open_history((tmp_path / "mlruns").as_uri())
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE runs (id INTEGER)")
    before = foreign.read_bytes()
    done = benchbed("ingest", foreign, "--store", tmp_path / "out")
    no_tables = "no experiments, latest_metrics, metrics, params table"
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"benchbed: error: sqlite:///{foreign}: not an MLflow SQLite store ({no_tables})"]  # fmt: skip
    assert foreign.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
