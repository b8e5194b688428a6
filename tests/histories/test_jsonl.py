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


DEEP = "[" * 200_000 + "]" * 200_000  # a value nested deeper than any JSON parser in the reader recurses


@pytest.mark.parametrize("number", ["1.5", "NaN"])  # NaN: orjson refuses the line, the standard library reads it
def test_a_line_nested_200000_deep_is_a_warning_naming_its_line(tmp_path: Path, number: str) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(f'{{"step": 1, "loss": 0.5}}\n{{"step": 2, "loss": {number}, "x": {DEEP}}}\n{{"step": 3}}\n')
    history = open_history(path)
    assert history.frame["step"].tolist() == [1, 3] and not history.partial
    assert history.warnings == [f"{path}:2: skipped line that is not JSON (ValueError: nested deeper than the JSON "
                                "parser reads)"]  # fmt: skip


def test_a_verl_jsonl_of_only_such_a_line_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from benchbed.cli.main import cli

    path = tmp_path / "metrics.jsonl"
    path.write_text(f'{{"step": 1, "data": {{"timing_s/step": NaN, "x": {DEEP}}}}}\n')
    store = tmp_path / "store"
    result = CliRunner().invoke(cli, ["ingest", str(path), "--adapter", "verl", "--store", str(store)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"benchbed: error: {path}:1: skipped line that is not JSON (ValueError: nested deeper than the JSON parser "
        'reads); no line of it is a readable file-logger record ({"step": N, "data": {...}})'
    ]
    assert not list(store.glob("**/record.json"))
