"""benchbed.watch.tail follows appended lines, and survives truncation and rotation; live figures sum per step."""

from __future__ import annotations

import math
import os
from pathlib import Path

from benchbed.watch.live import LiveFigures, sparkline
from benchbed.watch.tail import FileTail


def test_tail_returns_only_complete_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\ntw")
    tail = FileTail(log)
    assert tail.read() == ["one"]
    with log.open("a") as fh:
        fh.write("o\nthree\n")
    assert tail.read() == ["two", "three"]
    assert tail.read() == []


def test_tail_survives_truncation_and_rotation(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("old1\nold2\n")
    tail = FileTail(log)
    assert tail.read() == ["old1", "old2"]
    log.write_text("n\n")  # truncated in place, shorter than before
    assert tail.read() == ["n"]
    with log.open("a") as fh:
        fh.write("last of old\n")
    os.rename(log, tmp_path / "a.log.1")
    log.write_text("fresh\n")
    assert tail.read() == ["last of old", "fresh"]
    assert tail.resets == 2
    tail.close()


def test_live_figures_window_and_run() -> None:
    figures = LiveFigures(warmup_steps=1, window_steps=2)
    for step, (step_s, wait_s) in enumerate([(10.0, 9.0), (2.0, 1.0), (4.0, 1.0), (4.0, 3.0)], 1):
        figures.staleness([0.0, float(step % 2)])
        figures.step(step, step_s, wait_s, 8, observed_at=float(step))
    shown = figures.figures()
    assert shown["run"]["trainer_idle_ratio"] == (1.0 + 1.0 + 3.0) / (2.0 + 4.0 + 4.0)
    assert shown["window"]["trainer_idle_ratio"] == (1.0 + 3.0) / 8.0
    assert shown["run"]["staleness_mean"] == 1 / 6
    assert shown["run"]["staleness_max"] == 1.0
    assert math.isnan(shown["run"]["sandbox_init_failure_rate"])
    assert figures.median_step_s() == 4.0
    assert sparkline([0.0, 1.0, 0.5]) == "▁█▅"
