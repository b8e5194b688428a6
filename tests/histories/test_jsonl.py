"""The kit's JSONL source reads verl's file-logger lines and flat `step` rows into the History shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.adapterkit.histories import HistoryError, history_kind, open_history

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_verl_file_logger_lines_read_as_a_history() -> None:
    path = FIXTURES / "verl" / "verl-0.9.1-v1_sync" / "metrics.jsonl"
    assert history_kind(path) == "jsonl"
    history = open_history(path)
    assert list(history.frame["step"]) == list(range(7)) and history.source.tracker == "jsonl"
    assert history.frame["timing_s/step"].notna().sum() == 6 and history.frame["wall_time"].isna().all()


def test_flat_rows_a_cut_last_line_and_a_line_without_step(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "time/step": 2.5, "timestamp": 100.0}\n{"loss": 1}\n{"step": 2, "time/st')
    history = open_history(path)
    assert history.frame[["step", "wall_time", "time/step"]].values.tolist() == [[1, 100.0, 2.5]]
    assert history.partial and history.warnings[0] == f'{path}:2: no integer `step`; expected {{"step": N, ...}}'
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"loss": 1}\n')
    with pytest.raises(HistoryError, match="no JSON lines with a `step`"):
        open_history(empty)
