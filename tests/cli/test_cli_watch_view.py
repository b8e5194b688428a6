"""The terminal view of `benchbed watch`: a sparkline per figure, over the sliding window and over the whole run."""

from __future__ import annotations

from pathlib import Path

from benchbed.cli.watch import spark_table
from benchbed.watch.live import spread
from benchbed.watch.session import Watch

RUN = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "ref" / "async-4steps"


def test_whole_run_sparklines_pick_evenly_over_every_step() -> None:
    assert spread(list(range(100)), 5) == [0, 25, 50, 74, 99]  # indices i * 99 / 4, rounded, first and last kept
    assert spread([0.5, 0.25], 40) == [0.5, 0.25]


def test_a_sparkline_per_figure_over_the_window_and_the_whole_run() -> None:
    """The four-step engine fixture: trainer idle of the sliding window after steps 1-4 is 0.9545, 0.9420, 0.9653,
    0.9611 (blocks 5, 1, 8, 7 of 8 between its minimum and maximum); of the whole run, step 1 is the warm-up (no
    figure: a space), then 0.8286, 0.9751, 0.9668. Generator idle is 1 - utilisation, which only the whole run has
    (0.7597, 0.4942, 0.0779); no GPU samples: no GPU row."""
    watch = Watch(RUN, "ref")
    watch.update()
    watch.close()
    table = spark_table(watch.figures.history, watch.window_steps)
    figure, window, run = ([str(cell) for cell in column._cells] for column in table.columns)
    rows = dict(zip(figure, zip(window, run, strict=True), strict=True))
    assert list(rows) == ["trainer idle", "generator idle", "staleness mean", "staleness max", "throughput sps",
                          "zero adv"]  # fmt: skip
    assert rows["trainer idle"] == ("▅▁█▇", " ▁██")
    assert rows["generator idle"] == ("", " █▅▁")  # the sliding window has no generator figure
    assert rows["staleness max"] == ("▁███", " ▁▁▁")  # 0 then 1 in the window; 1 throughout the metric window
