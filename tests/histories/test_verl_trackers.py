"""The same verl run read from its JSONL/console log and from what verl's own `Tracking` wrote to W&B (offline),
MLflow (file store, SQLite store) and TensorBoard: the same trace rows, the same metrics (one test per pair)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import open_history
from benchbed.metrics import compute_metrics
from benchbed.trace import Trace

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")
pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")

FIXTURES = Path(__file__).parents[1] / "fixtures"
SCENARIOS = ("verl-0.9.1-v1_sync", "verl-0.9.1-fully_async")
SOURCES = ("wandb", "mlruns", "tensorboard_log")


def _rows(trace: Trace, keys: set[str]) -> list[tuple[str, int, float]]:
    events = trace.events[trace.events["key"].isin(keys)]
    return sorted(zip(events["key"], events["step"].astype(int), events["value"].astype(float), strict=True))


def _assert_same(mine: list[tuple[str, int, float]], reference: list[tuple[str, int, float]], tol: float) -> None:
    assert [(k, s) for k, s, _ in mine] == [(k, s) for k, s, _ in reference]
    for (key, step, a), (_, _, b) in zip(mine, reference, strict=True):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=tol, abs=tol), (key, step)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_tracker_history_gives_the_jsonl_figures(scenario: str, source: str) -> None:
    reference = VerlAdapter().parse(FIXTURES / "verl" / scenario / "metrics.jsonl")
    trace = VerlAdapter().parse(FIXTURES / "histories" / "verl" / scenario / source)
    keys = set(reference.events["key"])
    # W&B (JSON text) and MLflow (doubles) keep every digit of every logged value; a sum of several timers may
    # differ in its last bit, as the tracker hands the keys back in another order. TensorBoard keeps float32
    # (7 digits: 4e-6 s at a 60 s step, which a step's remainder after its timers inherits).
    tol = 1e-5 if source == "tensorboard_log" else 1e-12
    _assert_same(_rows(trace, keys), _rows(reference, keys), tol)
    # W&B and MLflow keep the run's config, which names the V1 trainer mode; the JSONL and TensorBoard do not
    assert trace.meta.mode == (scenario.split("-", 2)[2] if source != "tensorboard_log" else reference.meta.mode)
    assert trace.meta.extra["history"]["tracker"] == {"wandb": "wandb", "mlruns": "mlflow"}.get(source, "tensorboard")
    ours, theirs = compute_metrics(trace), compute_metrics(reference)
    for name in theirs.keys() & ours.keys():
        assert ours[name].value == pytest.approx(theirs[name].value, rel=tol, abs=tol), name
    assert set(theirs) <= set(ours)


@pytest.mark.parametrize(("scenario", "sizes"), [(SCENARIOS[0], (16, 4)), (SCENARIOS[1], (32, 4))])
def test_wandb_and_mlflow_histories_carry_the_run_config(scenario: str, sizes: tuple[int, int]) -> None:
    """The config verl hands its trackers gives the batch sizes (the JSONL alone has none): v1_sync 4 prompts x 4
    samples per step; fully_async 4 prompts x 4 samples x trigger_parameter_sync_step 2 per sync cycle."""
    for source in ("wandb", "mlruns"):
        trace = VerlAdapter().parse(FIXTURES / "histories" / "verl" / scenario / source)
        assert (trace.meta.samples_per_step, trace.meta.group_size) == sizes, source
    wandb = VerlAdapter().parse(FIXTURES / "histories" / "verl" / scenario / "wandb")
    assert (wandb.meta.framework_version, wandb.meta.extra["version_source"]) == (
        "0.9.1", "wandb run's requirements.txt")  # fmt: skip


def test_a_sqlite_store_reads_as_the_file_store(tmp_path: Path) -> None:
    """The file-store run copied into a SQLite store by mlflow's own client reads to the same history."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    store = FIXTURES / "histories" / "verl" / "verl-0.9.1-v1_sync" / "mlruns"
    original = open_history(store)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    run = client.create_run(client.create_experiment("benchbed"))
    metrics = [Metric(k, v, int(t * 1000), s) for s, t, row in original.rows() for k, v in row.items()]
    for i in range(0, len(metrics), 500):
        client.log_batch(run.info.run_id, metrics=metrics[i : i + 500])
    copied = open_history(uri)
    assert copied.source.tracker == "mlflow" and copied.source.uri == f"{uri}#{run.info.run_id}"
    assert list(copied.frame["step"]) == list(original.frame["step"])
    for key in original.keys:
        assert copied.frame[key].tolist() == pytest.approx(original.frame[key].tolist(), nan_ok=True), key
    assert open_history(tmp_path / "mlflow.db").source.run_id == run.info.run_id


def test_one_mlflow_run_folder_is_read_by_path(tmp_path: Path) -> None:
    store = FIXTURES / "histories" / "verl" / "verl-0.9.1-v1_sync" / "mlruns"
    (run_folder,) = [p for p in store.glob("*/*") if (p / "metrics").is_dir()]
    history = open_history(run_folder)
    assert history.source.run_id == run_folder.name and list(history.frame["step"]) == list(range(7))  # 0: validation
    copy = tmp_path / "mlruns"
    shutil.copytree(store, copy)
    shutil.copytree(run_folder, copy / run_folder.parent.name / ("f" * 32))
    with pytest.raises(Exception, match=r"holds 2 runs; name one as .*#RUN_ID"):
        open_history(copy)
