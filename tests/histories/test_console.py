"""The kit's console source: verl's `step:N - key:value` lines as a history, the same rows as the run's file-logger
JSONL, and through verl's history parser the same figures as verl's own parse of that JSONL."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import HistoryError, history_kind, open_history
from benchbed.metrics import compute_metrics

VERL = Path(__file__).parents[1] / "fixtures" / "verl"
SCENARIOS = ("verl-0.9.1-v1_sync", "verl-0.9.1-fully_async", "verl-0.9.1-one_step_off", "verl-0.9.1-v0",
             "verl-0.9.1-v1_colocate_async", "verl-0.9.1-v1_separate_async")  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_console_log_is_the_same_history_as_the_jsonl(scenario: str) -> None:
    console, jsonl = open_history(VERL / scenario / "console.log"), open_history(VERL / scenario / "metrics.jsonl")
    assert (history_kind(VERL / scenario / "console.log"), console.source.tracker) == ("console", "console")
    assert sorted(console.keys) == sorted(jsonl.keys) and console.frame["step"].tolist() == jsonl.frame["step"].tolist()
    for key in jsonl.keys:
        assert console.frame[key].tolist() == pytest.approx(jsonl.frame[key].tolist(), nan_ok=True), key
    assert console.frame["wall_time"].isna().all() and not console.partial and console.warnings == []
    theirs = compute_metrics(VerlAdapter().parse(VERL / scenario / "metrics.jsonl"))
    for history in (console, jsonl):
        ours = compute_metrics(VerlAdapter().parse_history(history))
        assert set(ours) == set(theirs)
        for name, metric in theirs.items():
            assert ours[name].value == pytest.approx(metric.value, rel=1e-12, abs=1e-12), (history.source.uri, name)


def test_wrapped_and_cut_lines(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "(TaskRunner pid=7) step:1 - timing_s/step:np.float64(10.5) - timing_s/gen:4.0 -\n"
        "timing_s/update_actor:tensor(3.) - actor/pg_loss:-0.5 - note:text\n"
        "step:2 - timing_s/step:11.0 - timing_s/gen:4.5 - timing_s/upd"
    )
    history = open_history(log)
    assert history.frame[["step", "timing_s/step", "timing_s/gen", "timing_s/update_actor"]].values.tolist()[0] == [
        1, 10.5, 4.0, 3.0]  # fmt: skip
    assert history.frame["actor/pg_loss"][0] == -0.5 and math.isnan(history.frame["timing_s/update_actor"][1])
    assert history.partial and history.warnings == [
        f"{log}:3: last line is cut off (no closing newline); read its complete pairs",
        f"{log}: 2 key:value pair(s) on step lines were not numbers or were cut; skipped",
    ]


def test_a_log_without_step_lines_is_no_history(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("INFO starting\nINFO done\n")
    assert history_kind(log) is None
    with pytest.raises(HistoryError, match=r"not a run history \(.*`step:N - key:value` console lines found\)$"):
        open_history(log)
