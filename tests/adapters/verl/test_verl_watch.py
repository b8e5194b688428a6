"""The verl live reader fed verl's file-logger JSONL (tests/fixtures/verl/*/metrics.jsonl, written by verl's own
Tracking) a few bytes at a time, half-written lines included: it sees each step once, in order, and its run figures
are the trainer idle and step time the adapter's parse gives the finished file."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.metrics import compute_metrics
from benchbed.watch.live import LiveFigures
from benchbed.watch.readers import check_watchable, live_reader

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verl"
SCENARIOS = ("verl-0.9.1-v1_sync", "verl-0.9.1-fully_async", "verl-0.9.1-one_step_off")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_live_figures_end_on_the_parse_of_the_whole_file(scenario: str, tmp_path: Path) -> None:
    check_watchable("verl", tmp_path)  # verl declares a live reader
    source = (FIXTURES / scenario / "metrics.jsonl").read_bytes()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    figures = LiveFigures(warmup_steps=1)
    reader = live_reader("verl", run_dir, figures)
    chunks, rng, at = 0, random.Random(7), 0
    while at < len(source):
        cut = min(len(source), at + rng.randint(1, 400))  # a piece may end inside a line
        with (run_dir / "metrics.jsonl").open("ab") as fh:
            fh.write(source[at:cut])
        at = cut
        reader.update(now=float(chunks))
        chunks += 1
    reader.close()
    metrics = compute_metrics(get_adapter("verl").parse(FIXTURES / scenario / "metrics.jsonl"), warmup_steps=1)
    logged = sorted({json.loads(line)["step"] for line in source.decode().splitlines()} - {0})
    assert figures.step_numbers == logged  # each step once, in order (verl's step 0 is a validation, no step)
    run = figures.figures()["run"]
    assert run["trainer_idle_ratio"] == pytest.approx(metrics["trainer_idle_ratio"].value, rel=1e-9)
    assert run["step_time_mean_s"] == pytest.approx(metrics["step_time_mean_s"].value, rel=1e-9)
    assert chunks > len(logged) and not figures.ended and reader.warnings == []


def test_a_launched_run_ends_when_its_record_does(tmp_path: Path) -> None:
    figures = LiveFigures()
    reader = live_reader("verl", tmp_path, figures)
    (tmp_path / "record.json").write_text(json.dumps({"status": "started"}))
    reader.update(now=0.0)
    assert not figures.ended
    (tmp_path / "record.json").write_text(json.dumps({"status": "succeeded"}))
    reader.update(now=1.0)
    assert figures.ended


def test_a_line_that_is_not_json_is_named_and_left_to_the_final_parse(tmp_path: Path) -> None:
    figures = LiveFigures()
    reader = live_reader("verl", tmp_path, figures)
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "data": {"timing_s/step": 2.0, "timing_s/gen": 1.0}}\n'
                                            "{cut\n")  # fmt: skip
    reader.update(now=0.0)
    assert figures.step_numbers == [1]
    assert reader.warnings == [f"{tmp_path / 'metrics.jsonl'}:2: not a JSON line (the final parse names it)"]
