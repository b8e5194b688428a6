"""The ref live reader, fed the engine fixture's event log, reaches the idle ratio the ref adapter's metrics give."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapter import get_adapter
from benchbed.metrics import compute_metrics
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import live_reader

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "ref" / "async-4steps"


def test_ref_reader_matches_the_adapters_idle_ratio() -> None:
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("ref", RUN, figures)
    assert reader.update(now=0.0) == 365
    assert reader.update(now=1.0) == 0
    reader.close()
    assert figures.ended
    assert figures.step_numbers == [1, 2, 3, 4]
    metrics = compute_metrics(get_adapter("ref").parse(RUN), warmup_steps=1)
    live = figures.figures()["run"]["trainer_idle_ratio"]
    assert abs(live - metrics["trainer_idle_ratio"].value) < 1e-7  # the trace subtracts the run start from epoch times
