"""slime ingest of 1,000 steps of console output plus TensorBoard events (target < 10 s, from issue 5) against
reading the same inputs with no interpretation: every console line, every event through tensorboard's own reader
(ratio reported)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter
from ratios import baseline_median, median_of, ratio
from workloads import write_slime_run

pytest.importorskip("tensorboard", reason="the slime TensorBoard reader needs the `tensorboard` extra")
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

ROUNDS = 3
TARGET_S = 10.0


@pytest.fixture(scope="module")
def steps(quick: bool) -> int:
    return 100 if quick else 1_000


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, steps: int) -> Path:
    run = tmp_path_factory.mktemp("slime") / "run"
    write_slime_run(run, steps)
    return run


def read_everything(run: Path) -> int:
    lines = len((run / "run.log").read_text().splitlines())
    events = sum(1 for path in sorted(run.rglob("events.out.tfevents.*")) for _ in EventFileLoader(str(path)).Load())
    return lines + events


def test_read_inputs(benchmark, run_dir: Path, medians: dict[str, float]) -> None:
    assert benchmark.pedantic(read_everything, args=(run_dir,), rounds=ROUNDS, iterations=1) > 0
    medians["console lines + tensorboard events read"] = median_of(benchmark)


def test_slime_ingest(benchmark, run_dir: Path, steps: int, medians: dict[str, float]) -> None:
    trace = benchmark.pedantic(SlimeAdapter().parse, args=(run_dir,), rounds=ROUNDS, iterations=1)
    assert int((trace.events["key"] == "trainer.step").sum()) == steps
    seconds = median_of(benchmark)
    baseline = baseline_median(medians, "console lines + tensorboard events read")
    ratio(f"slime ingest, {steps:,} steps", seconds, "console lines + tensorboard events read", baseline, None)
    assert seconds < TARGET_S
