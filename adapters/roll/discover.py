"""A run is the folder holding its TensorBoard log_dir (`<log_dir>/<exp_name>/<YYYYmmdd-HHMMSS>/events.*`)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.histories.locate import EVENT_FILE


def marks_run(path: Path) -> Path | None:
    """The run an event file marks: the folder above `tensorboard/` as rendered runs lay it out, else log_dir."""
    if not path.name.startswith(EVENT_FILE):
        return None
    board = path.parents[2] if len(path.parents) > 2 else path.parent
    return board.parent if board.name == "tensorboard" else board
