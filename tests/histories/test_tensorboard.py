"""TensorBoard reading: scalars written as simple values (torch/tensorboardX) and as tensors (TensorBoard 2 API)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.slime.tensorboard import split_axes

from benchbed.adapterkit.histories.tensorboard import INSTALL_HINT, read_event_file, scalar_dicts

pytest.importorskip("tensorboard", reason=f"the `tensorboard` extra is not installed: {INSTALL_HINT}")
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402


def test_tensor_form_scalars_and_step_axes(tmp_path: Path) -> None:
    writer = EventFileWriter(str(tmp_path))
    for tag, step, number in (("perf/train_time", 3, 2.5), ("train/loss", 3, 0.125), ("perf/train_wait_time", 3, 7.0)):
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(number))
        value.metadata.plugin_data.plugin_name = "scalars"
        writer.add_event(
            event_pb2.Event(wall_time=1000.0 + step, step=step, summary=summary_pb2.Summary(value=[value]))
        )
    image = summary_pb2.Summary.Value(tag="samples", tensor=tensor_util.make_tensor_proto([1.0, 2.0]))
    image.metadata.plugin_data.plugin_name = "images"  # not a scalar: ignored
    writer.add_event(event_pb2.Event(wall_time=1004.0, step=3, summary=summary_pb2.Summary(value=[image])))
    writer.close()
    path = next(tmp_path.glob("events.out.tfevents*"))
    assert read_event_file(path).rows == [("perf/train_time", 3, 1003.0, 2.5), ("train/loss", 3, 1003.0, 0.125),
                                     ("perf/train_wait_time", 3, 1003.0, 7.0)]  # fmt: skip
    (entry,), damage = scalar_dicts(path)
    assert damage is None
    train, other = split_axes(entry)
    assert train == {"train/loss": 0.125} and other == {"perf/train_time": 2.5, "perf/train_wait_time": 7.0}
