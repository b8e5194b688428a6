"""Histories read into blocks of doubles (RowBlocks) give the frame a dict per row gave: rows in rank order, keys by
the first row holding them, a later value of a key in a row winning, blocks widened for keys first seen late."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbed.adapterkit.histories.history import frame_from_rows
from benchbed.adapterkit.histories.row_blocks import BLOCK_ROWS, RowBlocks
from benchbed.adapterkit.histories.tensorboard import INSTALL_HINT, by_step, read_event_file, read_tensorboard


def test_rows_come_back_in_rank_order_with_keys_as_a_table_of_them_shows_them() -> None:
    blocks = RowBlocks()
    late, early = blocks.row(rank=10), blocks.row(rank=2)
    blocks.set(late, "b", 1.0)
    blocks.set(late, "a", 2.0)
    blocks.set(early, "c", 3.0)
    blocks.set(early, "a", 4.0)
    blocks.set(early, "c", 5.0)  # the same key again in a row: the later value
    order = blocks.order()
    assert order.tolist() == [early, late]
    assert blocks.keys() == ["c", "a", "b"]  # row 2 holds c then a; b first appears at row 10
    matrix = blocks.matrix(order)
    assert matrix.shape == (2, 3)
    np.testing.assert_array_equal(matrix, [[5.0, 4.0, np.nan], [np.nan, 2.0, 1.0]])


def test_a_key_first_seen_after_thousands_of_rows_widens_only_its_block() -> None:
    blocks = RowBlocks()
    for step in range(BLOCK_ROWS + 10):
        blocks.set(blocks.row(), "a", float(step))
    blocks.set(BLOCK_ROWS + 5, "b", -1.0)
    blocks.set(3, "b", -2.0)  # an earlier block, narrower: widened too
    matrix = blocks.matrix()
    assert matrix.shape == (BLOCK_ROWS + 10, 2) and blocks.keys() == ["a", "b"]
    assert matrix[BLOCK_ROWS + 9, 0] == BLOCK_ROWS + 9
    assert np.flatnonzero(~np.isnan(matrix[:, 1])).tolist() == [3, BLOCK_ROWS + 5]
    assert matrix[3, 1] == -2.0 and matrix[BLOCK_ROWS + 5, 1] == -1.0


def test_frame_from_rows_is_the_frame_of_a_dict_per_row() -> None:
    rows = [(0, 1.5, {"x": 1.0, "step": 9.0}), (2, None, {"y": 2.0, "x": True}), (1, 3.0, {})]
    frame = frame_from_rows(rows, parts=["p0", "p1", "p2"])
    assert frame.columns.tolist() == ["step", "wall_time", "part", "x", "y"]  # a key named step is no column
    assert frame["step"].tolist() == [0, 2, 1] and frame["part"].tolist() == ["p0", "p1", "p2"]
    assert frame["wall_time"].tolist()[0] == 1.5 and math.isnan(frame["wall_time"][1])
    assert frame["x"].tolist()[:2] == [1.0, 1.0] and math.isnan(frame["y"][0]) and frame["y"][1] == 2.0


def test_tensorboard_steps_out_of_order_and_repeated_read_as_grouped_by_step(tmp_path: Path) -> None:
    """Steps 5, 3, 5 again (a restart): one row per step, in step order, the last value of a tag at a step, the
    latest wall time; the keys as a table of the rows by step shows them."""
    pytest.importorskip("tensorboard", reason=f"the `tensorboard` extra is not installed: {INSTALL_HINT}")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for wall, step, tag, number in ((10.0, 5, "loss", 1.0), (11.0, 3, "lr", 0.25), (12.0, 3, "loss", 2.0),
                                    (13.0, 5, "loss", 3.0), (9.0, 5, "grad", 4.0)):  # fmt: skip
        value = summary_pb2.Summary.Value(tag=tag, simple_value=number)
        writer.add_event(event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents*")
    frame = read_tensorboard(tmp_path).frame
    grouped = by_step(path, read_event_file(path).rows)
    expected = pd.DataFrame.from_records([e.values for e in grouped])
    assert frame["step"].tolist() == [3, 5] == [e.step for e in grouped]
    assert frame["wall_time"].tolist() == [12.0, 13.0] == [e.wall_time for e in grouped]
    assert frame.columns.tolist()[3:] == expected.columns.tolist() == ["lr", "loss", "grad"]
    np.testing.assert_array_equal(frame[["lr", "loss", "grad"]].to_numpy(), [[0.25, 2.0, np.nan], [np.nan, 3.0, 4.0]])
