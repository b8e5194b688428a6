"""GPU samples benchbed takes itself: the NVML sampler of a local launch (against a stand-in for pynvml, as this
machine has no NVIDIA GPU), the samples in the trace's steps, and the GPU metrics of a real reference-engine run."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbed import keys as K
from benchbed.launch import gpu_sampler
from benchbed.launch.gpu_sampler import SAMPLES_FILENAME, gpu_sampling, load_nvml, read_samples
from benchbed.metrics import compute_metrics
from benchbed.pipeline import _with_sampled_gpus
from benchbed.trace import Trace, TraceBuilder, TraceMeta

from .fake_nvml import FakeGpu, FakeNvml, NVMLError
from .refrun import run_ref


class NoDriver(FakeNvml):
    """pynvml installed on a machine without the NVIDIA driver: nvmlInit fails (NVMLError_LibraryNotFound)."""

    def nvmlInit(self) -> None:  # noqa: N802 (pynvml's name)
        raise NVMLError("NVML Shared Library Not Found")


@pytest.mark.parametrize(
    "pynvml", [None, NoDriver([FakeGpu()]), FakeNvml([])], ids=["no-package", "no-driver", "no-gpu"]
)
def test_without_nvml_nothing_is_sampled_and_nothing_fails(pynvml: object, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)  # None: `import pynvml` raises ImportError
    assert load_nvml() is None
    with gpu_sampling(tmp_path) as sampling:
        assert sampling is False
    assert not (tmp_path / SAMPLES_FILENAME).exists()


def test_the_sampler_writes_a_line_per_gpu_and_sample_and_leaves_out_what_nvml_refuses(tmp_path: Path) -> None:
    nvml = FakeNvml([FakeGpu(utilization=90, memory_used=70 << 30, power_mw=300_000, sm_clock=1980),
                     FakeGpu(utilization=20, power_mw=None)])  # fmt: skip
    with gpu_sampling(tmp_path, nvml=nvml, interval_s=0.02) as sampling:
        assert sampling is True
        while nvml.calls < 6:
            time.sleep(0.01)
    assert nvml.shut_down
    lines = [json.loads(line) for line in (tmp_path / SAMPLES_FILENAME).read_text().splitlines()]
    assert len(lines) >= 6 and len(lines) % 2 == 0
    first, second = lines[0], lines[1]
    assert first["gpu"] == 0 and first["utilization"] == 90 and first["memory_used"] == 70 << 30
    assert first["power"] == 300.0 and first["sm_clock"] == 1980
    assert second["gpu"] == 1 and second["utilization"] == 20 and "power" not in second  # NVML refused it
    assert first["t"] == second["t"]  # one sample of every GPU, at one time
    times, keys, values = read_samples(tmp_path / SAMPLES_FILENAME, [])
    assert keys[:5] == ["nvml.0.utilization", "nvml.0.memory_used", "nvml.0.power", "nvml.0.sm_clock",
                        "nvml.1.utilization"]  # fmt: skip
    assert values[:5] == [90.0, float(70 << 30), 300.0, 1980.0, 20.0]


def test_a_damaged_sample_line_is_named_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / SAMPLES_FILENAME
    path.write_text('{"t": 10.0, "gpu": 0, "utilization": 50}\nnot json\n{"gpu": 1}\n')
    warnings: list[str] = []
    times, keys, values = read_samples(path, warnings)
    assert (times, keys, values) == ([10.0], ["nvml.0.utilization"], [50.0])
    assert [w.split(": ")[0] for w in warnings] == [f"{path}:2", f"{path}:3"]


def _timed_trace(origin: float) -> Trace:
    """Three 10-second trainer steps from t = 0, whose zero is `origin` in epoch seconds."""
    builder = TraceBuilder()
    for step in (1, 2, 3):
        builder.span(K.TRAINER_STEP, 10.0 * (step - 1), 10.0 * step, step=step, actor="trainer")
        builder.span(K.TRAINER_WAIT, 10.0 * (step - 1), 10.0 * (step - 1) + 4.0, step=step, actor="trainer")
    return builder.build(TraceMeta(adapter="ref", extra={"epoch_origin": origin}))


def test_launch_samples_land_in_the_steps_they_were_taken_in(tmp_path: Path) -> None:
    origin = 1_800_000_000.0
    schedule = ((5.0, 100, 100), (15.0, 80, 20), (25.0, 60, 40), (35.0, 0, 0))  # (t, GPU 0 %, GPU 1 %)
    rows = [(origin + t, gpu, util) for t, util0, util1 in schedule for gpu, util in ((0, util0), (1, util1))]
    (tmp_path / SAMPLES_FILENAME).write_text("".join(json.dumps({"t": t, "gpu": g, "utilization": u}) + "\n"
                                                     for t, g, u in rows))  # fmt: skip
    trace = _with_sampled_gpus(_timed_trace(origin), tmp_path, [])
    points = trace.events[trace.events["key"] == K.GPU_UTILIZATION]
    assert points["step"].tolist() == [1, 1, 2, 2, 3, 3, -1, -1]  # after the last step: no step
    assert np.allclose(points["t0"], [5, 5, 15, 15, 25, 25, 35, 35])
    assert points["actor"].tolist() == ["gpu0", "gpu1"] * 4
    trace.meta.extra["resources"] = {"trainer_gpus": 1, "generator_gpus": 1}
    metrics = compute_metrics(trace, warmup_steps=1)  # window: steps 2 and 3
    assert metrics["gpu_busy_ratio"].value == pytest.approx((0.8 + 0.2 + 0.6 + 0.4) / 4)
    assert metrics["trainer_gpu_busy_ratio"].value == pytest.approx(0.7)
    assert metrics["generator_gpu_busy_ratio"].value == pytest.approx(0.3)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(0.4)
    assert metrics["trainer_gpu_idle_gap"].value == pytest.approx((1 - 0.7) - 0.4)
    assert metrics["gpu_busy_ratio"].source == "point"


def test_colocated_gpus_serve_both_roles_and_no_table_leaves_the_roles_unknown(tmp_path: Path) -> None:
    origin = 1_800_000_000.0
    lines = [{"t": origin + 15.0, "gpu": g, "utilization": u} for g, u in ((0, 90), (1, 50))]
    (tmp_path / SAMPLES_FILENAME).write_text("".join(json.dumps(line) + "\n" for line in lines))
    trace = _with_sampled_gpus(_timed_trace(origin), tmp_path, [])
    unknown = compute_metrics(trace)
    assert unknown["gpu_busy_ratio"].value == pytest.approx(0.7)
    assert "trainer_gpu_busy_ratio" not in unknown and "generator_gpu_busy_ratio" not in unknown
    trace.meta.extra["resources"] = {"trainer_gpus": 2, "generator_gpus": 2, "colocated": True}
    both = compute_metrics(trace)
    assert both["trainer_gpu_busy_ratio"].value == both["generator_gpu_busy_ratio"].value == pytest.approx(0.7)


def test_samples_stay_out_of_a_trace_with_no_clock(tmp_path: Path) -> None:
    (tmp_path / SAMPLES_FILENAME).write_text('{"t": 1.0, "gpu": 0, "utilization": 50}\n')
    builder = TraceBuilder()
    builder.agg(K.TRAINER_STEP, 1, 10.0, actor="trainer")
    warnings: list[str] = []
    trace = _with_sampled_gpus(builder.build(TraceMeta(adapter="verl")), tmp_path, warnings)
    assert not (trace.events["key"] == K.GPU_UTILIZATION).any()
    assert len(warnings) == 1 and "no wall-clock origin or no timed trainer steps" in warnings[0]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_local_launch_samples_the_gpus_into_its_record(tmp_path_factory, monkeypatch) -> None:
    """A real reference-engine run launched by benchbed, with NVML answered by the stand-in: the trace holds a
    sample per GPU and second in its steps, and the record the GPU metrics by the spec's roles."""
    nvml = FakeNvml([FakeGpu(utilization=30), FakeGpu(utilization=70)])
    monkeypatch.setattr(gpu_sampler, "load_nvml", lambda: nvml)
    monkeypatch.setattr(gpu_sampler, "INTERVAL_S", 0.1)
    run = run_ref(tmp_path_factory, "gpu-sampled", {"steps": 4}, {"mode": "sync", "max_new_tokens": 8})
    assert run.record.status == "succeeded", run.record.error
    points = run.trace.events[run.trace.events["key"] == K.GPU_UTILIZATION]
    assert set(points["actor"]) == {"gpu0", "gpu1"} and (points["step"] > 1).any()
    assert run.record.metrics["gpu_busy_ratio"].value == pytest.approx(0.5)
    # the spec's default [resources] (8 trainer GPUs, then 8 generator GPUs): indices 0 and 1 are the trainer's
    assert run.record.metrics["trainer_gpu_busy_ratio"].value == pytest.approx(0.5)
    assert "generator_gpu_busy_ratio" not in run.record.metrics
    assert nvml.shut_down
    stored = pd.read_json(run.run_dir / SAMPLES_FILENAME, lines=True)
    assert set(stored["gpu"]) == {0, 1}
