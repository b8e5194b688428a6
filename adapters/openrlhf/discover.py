"""A run is the folder holding its TensorBoard event files (`<logger.tensorboard_dir>/<run_name>/events.*`)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.histories.locate import EVENT_FILE


def marks_run(path: Path) -> Path | None:
    """The run an event file marks: the folder above `tensorboard/` as rendered runs lay it out, else the
    tensorboard_dir itself."""
    if not path.name.startswith(EVENT_FILE):
        return None
    board = path.parent.parent
    return board.parent if board.name == "tensorboard" else board
