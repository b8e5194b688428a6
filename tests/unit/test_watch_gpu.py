"""GPU busy in `benchbed watch` (issue 38): NVML samples of a launch (gpu_samples.jsonl) feed the live GPU-busy
figure beside the timers, it is exported as a Prometheus gauge, and the alarm `gpus_idle_during_compute` fires when
the GPUs sit idle over half the time the timers call trainer work. Figures computed by hand in each test."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from benchbed.watch.alarms import check, load_rules
from benchbed.watch.gpu import GpuSamplesTail
from benchbed.watch.live import LiveFigures, gauge
from benchbed.watch.prometheus import watch_exposition
from benchbed.watch.session import Watch

REF_RUN = Path(__file__).parents[1] / "fixtures" / "ref" / "async-4steps"


def _samples(path: Path, utilizations: list[float], t: float = 100.0) -> None:
    """One NVML sample line per value, GPUs 0 and 1 in turn (the sampler's fields, benchbed.launch.gpu_sampler)."""
    with path.open("a") as fh:
        for i, value in enumerate(utilizations):
            fh.write(json.dumps({"t": t + i, "gpu": i % 2, "utilization": value, "memory_used": 1 << 30,
                                 "power": 250.0, "sm_clock": 1980}) + "\n")  # fmt: skip


def test_nvml_samples_count_with_the_step_that_ends_next(tmp_path: Path) -> None:
    figures = LiveFigures(warmup_steps=0)
    tail = GpuSamplesTail(tmp_path)
    assert tail.update(figures) == 0  # no GPUs: no file, no figures, no error
    _samples(tmp_path / "gpu_samples.jsonl", [30.0, 10.0])
    tail.update(figures)
    figures.step(1, 2.0, 0.5, 4, observed_at=1.0)  # idle 0.25
    _samples(tmp_path / "gpu_samples.jsonl", [90.0, 70.0])
    tail.update(figures)
    figures.step(2, 2.0, 0.5, 4, observed_at=2.0)
    run = figures.figures()["run"]
    assert run["gpu_busy_ratio"] == pytest.approx((0.3 + 0.1 + 0.9 + 0.7) / 4)  # 0.5
    assert run["gpu_idle_gap"] == pytest.approx((1 - 0.5) - 0.25)
    (tmp_path / "gpu_samples.jsonl").open("a").write("{not a sample\n")
    tail.update(figures)
    assert tail.warnings == [f"{tmp_path / 'gpu_samples.jsonl'}:5: not a GPU sample (expected t and gpu)"]


def test_gpu_busy_is_a_prometheus_gauge_and_a_gauge_in_the_view() -> None:
    figures = LiveFigures(warmup_steps=0)
    for value in (0.2, 0.4):
        figures.gpu_sample(value)
    figures.step(1, 1.0, 0.0, 2, observed_at=1.0)
    text = watch_exposition(figures, [], {"run": "r1", "framework": "verl", "adapter": "verl"})
    assert 'benchbed_gpu_busy_ratio{adapter="verl",framework="verl",run="r1",scope="run"} 0.30000000000000004' in text
    assert "# TYPE benchbed_gpu_busy_ratio gauge" in text
    assert gauge(0.3, 10) == "███░░░░░░░" and gauge(1.5, 4) == "████"


def test_gpus_idle_while_the_timers_say_compute_raises_its_alarm() -> None:
    rules = load_rules()
    (rule,) = [r for r in rules if r.name == "gpus_idle_during_compute"]
    assert rule.watch == "gpu_idle_gap" and "idle" in rule.reason
    figures = LiveFigures(warmup_steps=0)
    for _ in range(9):
        figures.gpu_sample(0.2)
    figures.step(1, 1.0, 0.1, 4, observed_at=1.0)  # gap (1 - 0.2) - 0.1 = 0.7, but 9 samples: below min_count 10
    fired: set[str] = set()
    assert [a.rule.name for a in check(rules, figures, now=1.0, fired=fired)] == []
    figures.gpu_sample(0.2)
    figures.step(2, 1.0, 0.1, 4, observed_at=2.0)  # 10 samples in the window's steps, the same gap
    (alarm,) = check(rules, figures, now=2.0, fired=fired)
    assert alarm.rule.name == "gpus_idle_during_compute" and alarm.value == pytest.approx(0.7)
    busy = LiveFigures(warmup_steps=0)  # busy GPUs (90 %) during the same timed work: no alarm
    for _ in range(10):
        busy.gpu_sample(0.9)
    busy.step(1, 1.0, 0.1, 4, observed_at=1.0)
    assert check(rules, busy, now=1.0, fired=set()) == []


def test_a_watched_run_without_gpus_shows_no_gpu_figures_and_one_with_them_does(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(REF_RUN, run_dir)
    watch = Watch(run_dir, "ref", clock=lambda: 0.0)
    watch.update()
    assert math.isnan(watch.figures.figures()["window"]["gpu_busy_ratio"])
    watch.close()
    _samples(run_dir / "gpu_samples.jsonl", [40.0, 60.0])
    watch = Watch(run_dir, "ref", clock=lambda: 0.0)
    rows, _ = watch.update()
    watch.close()
    assert rows[0].window["gpu_busy_ratio"] == pytest.approx(0.5)  # read before the log: they count with step 1
