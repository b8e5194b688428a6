"""A Watch fed the engine fixture's event log one line at a time, in the order the engine wrote them: one row per
trainer step as it finishes, and live figures at the end equal to the ones the ref adapter's metrics give."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchbed.watch.session import Watch, final_metrics

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "ref" / "async-4steps"
SAME = ("trainer_idle_ratio", "generator_utilization", "staleness_mean", "staleness_max", "trainer_throughput_sps",
        "zero_adv_group_fraction", "step_time_mean_s")  # fmt: skip


def _lines_in_time_order() -> list[tuple[str, str]]:
    lines = [(path.name, line) for path in sorted((RUN / "events").glob("*.jsonl"))
             for line in path.read_text().splitlines()]  # fmt: skip
    return sorted(lines, key=lambda item: json.loads(item[1])["t"])


def test_a_row_per_step_as_it_finishes_and_the_final_figures(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    watch = Watch(tmp_path, "ref", warmup_steps=1, clock=lambda: 0.0)
    seen = []
    for name, line in _lines_in_time_order():
        with (tmp_path / "events" / name).open("a") as handle:
            handle.write(line + "\n")
        rows, _ = watch.update()
        if json.loads(line)["ev"] == "step":
            assert [r.step for r in rows] == [json.loads(line)["step"]]  # the update after the step's line shows it
            seen.extend(rows)
        else:
            assert rows == []
    watch.close()
    assert [r.step for r in seen] == [1, 2, 3, 4] and watch.ended
    assert math.isnan(seen[0].run["trainer_idle_ratio"])  # step 1 is the warm-up, outside the metric window
    metrics = final_metrics(tmp_path, "ref", warmup_steps=1)
    live = watch.figures.figures()["run"]
    for name in SAME:
        assert live[name] == pytest.approx(metrics[name].value, rel=1e-7), name  # epoch times less the run start
    assert seen[-1].run["trainer_idle_ratio"] == pytest.approx(metrics["trainer_idle_ratio"].value, rel=1e-7)
    assert [a.rule.name for a in watch.alarms] == ["truncation"]  # 5 of 8 window samples hit max_new_tokens
    assert watch.warnings == [watch.alarms[0].line()]


def test_one_update_of_the_whole_log_gives_every_step(tmp_path: Path) -> None:
    watch = Watch(RUN, "ref", warmup_steps=1, clock=lambda: 0.0)
    rows, _ = watch.update()
    watch.close()
    assert [r.step for r in rows] == [1, 2, 3, 4]
    assert [r.step_s for r in rows] == pytest.approx([9.64132, 1.06706, 9.5888, 0.615566], rel=1e-5)
    assert rows[-1].regime == "generation_bound"  # the metric window's trainer idle is 0.97
