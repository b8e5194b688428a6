"""The kit's columnar step records: values read back exactly as JSON gave them, non-numbers masked, tables by key set,
and the file-logger reader into columns keeping the dict reader's records and warnings."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from benchbed import progress
from benchbed.adapterkit.histories.jsonl import read_step_columns, read_step_records
from benchbed.adapterkit.step_columns import Places, Record, StepColumns


def test_values_come_back_as_json_gave_them() -> None:
    columns = StepColumns()
    data = {"a": 1.5, "b": 3, "c": None, "d": True, "e": "text", "f": 2**60 + 1, "g": 10**400, "h": -0.0}
    assert columns.add(7, data, "m.jsonl", 2) == 0
    back = columns[0]
    assert back == Record(7, data, "m.jsonl", 2)
    assert [type(v) for v in back.data.values()] == [float, int, type(None), bool, str, int, int, float]
    assert columns.get(0, "f") == 2**60 + 1 and columns.get(0, "missing", "x") == "x"
    assert columns.where(0) == "m.jsonl:2"


def test_matrix_reads_numbers_and_masks_the_rest() -> None:
    columns = StepColumns()
    columns.add(1, {"t": 2.0, "n": 4}, "f", 1)
    columns.add(2, {"t": None, "n": False}, "f", 2)
    columns.add(3, {"x": 1.0}, "f", 3)
    assert len(columns.tables) == 2 and list(columns.table_of) == [0, 0, 1]
    values, not_number = columns.tables[0].matrix(np.array([0, 1]), ["n", "t"])
    assert values[0].tolist() == [4.0, 2.0] and np.isnan(values[1]).all()
    assert not_number is not None and not_number.tolist() == [[False, False], [True, True]]
    _, none = columns.tables[0].matrix(np.array([0]), ["t"])
    assert none is None
    assert columns.key_set() == {"t", "n", "x"} and columns.key_set([2]) == {"x"}
    assert list(Places(columns, np.array([2, 0]))) == ["f:3", "f:1"]


def test_values_take_nine_bytes_each() -> None:
    """10^4 records of 50 floats: 9 bytes a value (a double and a type byte), against some 70 as dicts."""
    columns = StepColumns()
    for step in range(10_000):
        columns.add(step, {f"k{j}": step + j / 100 for j in range(50)}, "f", step + 1)
    table = columns.tables[0]
    held = sys.getsizeof(table.values) + sys.getsizeof(table.kinds)
    assert 9 * 500_000 <= held < 1.2 * 9 * 500_000
    assert columns.get(9_999, "k49") == 9_999.49


def test_columns_read_the_lines_the_dict_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(
        '{"step": 1, "data": {"a": 1.0, "b": 2}}\n'
        "not json\n"
        '{"step": 2, "data": {"a": NaN, "b": 3}}\n'
        '{"step": 10000000000000000000, "data": {"a": 1.0}}\n'
        '{"step": 3, "data": {"a": 0.5, "b": 4, "c": "x"}}\n'
        '{"step": 4, "data": {"a": 1'
    )
    warned_dicts: list[str] = []
    records, cut = read_step_records(path, warned_dicts, flat=False)
    warned: list[str] = []
    columns, cut_too = read_step_columns(path, warned)
    assert cut and cut_too
    assert [(r.step, r.data, r.line) for r in columns] == [(1, {"a": 1.0, "b": 2}, 1), (2, {"b": 3}, 3),
                                                            (3, {"a": 0.5, "b": 4, "c": "x"}, 5)]  # fmt: skip
    assert [(r.step, r.data, r.line) for r in records] == [(r.step, r.data, r.line) for r in columns]
    assert warned == warned_dicts
    assert f"{path}:4: not a file-logger record (step 10000000000000000000)" in warned[1]
    assert warned[-1] == f"{path}: a is NaN or infinite at step(s) 2; left out there"
    assert not math.isnan(columns.get(0, "a"))


def test_the_column_reader_reports_its_progress(tmp_path: Path) -> None:
    """What the CLI's bar on a terminal draws: bytes read of the file's size, every 4 MiB and at the end."""
    path = tmp_path / "metrics.jsonl"
    line = '{"step": %d, "data": {"pad": "' + "x" * 1000 + '", "a": 1.0}}\n'
    path.write_text("".join(line % step for step in range(1, 9001)))
    size = path.stat().st_size
    reports: list[tuple[str, int, int]] = []
    with progress.reporting(lambda what, done, total: reports.append((what, done, total))):
        columns, _ = read_step_columns(path, [])
    assert len(columns) == 9000
    assert reports[-1] == ("reading metrics.jsonl", size, size)
    assert len(reports) == size // progress.EVERY + 1 and all(total == size for _, _, total in reports)


def test_text_lines_stream_as_split_numbers_them(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A console log is read a line at a time with the numbers and cut-off mark `text.split("\\n")` gave; a line
    past the limit keeps its first LINE_LIMIT bytes and the next line keeps its number."""
    from benchbed.adapterkit.histories import console

    path = tmp_path / "console.log"
    for text in ["", "a\n", "a", "a\r\rb\nc\n\n", "x\xff\n\u00e9"]:
        path.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else b"x\xff\n\xc3\xa9")
        with path.open("r", errors="replace", newline="") as fh:  # the whole-file read it replaces
            expected = fh.read().split("\n")
        got = list(console.read_text_lines(path))
        assert [line for _, line, _ in got] == expected
        assert [n for n, _, _ in got] == list(range(1, len(expected) + 1))
        assert [n for n, _, cut in got if cut] == ([] if path.read_bytes().endswith(b"\n") else [len(expected)])
    monkeypatch.setattr(console, "LINE_LIMIT", 8)
    path.write_bytes(b"0123456789abcdef\nshort\n0123456789")
    assert list(console.read_text_lines(path)) == [(1, "01234567", False), (2, "short", False),
                                                   (3, "01234567", True)]  # fmt: skip
