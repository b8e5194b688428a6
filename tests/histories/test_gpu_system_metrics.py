"""GPU utilisation from the trackers' system metrics: a verl run's W&B `stats` records and MLflow `system/gpu_*`
metrics (tests/fixtures/histories/make_gpu_trackers.py, whose docstring holds the schedule) become `gpu.*` points in
the steps they were taken in, and the GPU metrics match the schedule's figures, computed by hand:
window (steps 2-6) GPUs 0-3 at 90, 70, 40, 20 % -> every GPU 55 %, the trainer's (0, 1) 80 %, the generator's
(2, 3) 30 %; 300 W and 200 W -> 250 W. The warm-up's 100 % and the 0 % after the last step are outside it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchbed import keys as K
from benchbed.adapterkit.histories import open_history

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
pytest.importorskip("mlflow", reason="the `mlflow` extra is not installed: pip install 'benchbed[mlflow]'")

RUN = Path(__file__).parents[1] / "fixtures" / "histories" / "verl" / "verl-0.9.1-v1_sync-gpu"
WANDB = next((RUN / "wandb").glob("offline-run-*"))
SOURCES = {"wandb": WANDB, "mlflow": RUN / "mlruns"}


def _ingest(benchbed, location: Path, store: Path, *flags: str) -> dict:
    done = benchbed("ingest", location, "--adapter", "verl", "--store", store, "--json", *flags)
    assert done.returncode == 0, done.stderr
    return {name: m["value"] for name, m in json.loads(done.stdout)["metrics"].items()}


@pytest.mark.parametrize("source", SOURCES)
def test_gpu_metrics_match_the_schedule(benchbed, source: str, tmp_path: Path) -> None:
    metrics = _ingest(benchbed, SOURCES[source], tmp_path, "--trainer-gpus", "2", "--generator-gpus", "2")
    assert metrics["gpu_busy_ratio"] == pytest.approx(0.55)
    assert metrics["trainer_gpu_busy_ratio"] == pytest.approx(0.80)
    assert metrics["generator_gpu_busy_ratio"] == pytest.approx(0.30)
    assert metrics["gpu_power_mean_w"] == pytest.approx(250.0)
    # verl's own timers: the trainer waits timing_s/gen of each synchronous step
    assert metrics["trainer_gpu_idle_gap"] == pytest.approx((1 - 0.80) - metrics["trainer_idle_ratio"])


def test_colocated_gpus_serve_both_roles_and_no_gpu_counts_leave_roles_unknown(benchbed, tmp_path: Path) -> None:
    colocated = _ingest(benchbed, WANDB, tmp_path / "a", "--trainer-gpus", "4", "--generator-gpus", "4", "--colocated")
    assert colocated["trainer_gpu_busy_ratio"] == colocated["generator_gpu_busy_ratio"] == pytest.approx(0.55)
    unknown = _ingest(benchbed, WANDB, tmp_path / "b")
    assert unknown["gpu_busy_ratio"] == pytest.approx(0.55)
    assert "trainer_gpu_busy_ratio" not in unknown and "generator_gpu_busy_ratio" not in unknown


@pytest.mark.parametrize("source", SOURCES)
def test_samples_become_points_in_the_steps_they_fell_in(source: str) -> None:
    from benchbed.adapters.verl import VerlAdapter

    history = open_history(SOURCES[source])
    assert not any(k.startswith("system/") for k in history.keys)  # no system metric among the steps' figures
    trace = VerlAdapter().parse(SOURCES[source])
    util = trace.events[trace.events["key"] == K.GPU_UTILIZATION]
    # two samples of four GPUs before each of the 7 logged steps (0-6), two after the last
    assert len(util) == 2 * 4 * 8
    by_step = util.groupby("step")["value"].agg(["count", "mean"])
    assert by_step["count"].to_dict() == {-1: 8, **{s: 8 for s in range(7)}}
    assert by_step["mean"].to_dict() == pytest.approx({-1: 0.0, 0: 1.0, 1: 1.0, **{s: 0.55 for s in range(2, 7)}})
    assert sorted(set(util["actor"])) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert (util["t0"].to_numpy() >= 0).all() and np.isfinite(trace.meta.extra["epoch_origin"])
    memory = trace.events[(trace.events["key"] == K.GPU_MEMORY_USED) & (trace.events["step"] == 3)]
    assert sorted(set(memory["value"])) == [40 * 2**30, 70 * 2**30]  # bytes, from MLflow's decimal megabytes too
