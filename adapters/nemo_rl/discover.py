"""A NeMo-RL run is its logger's folder (`logger.log_dir`/exp_NNN): TensorBoard event files in its `tensorboard/`."""

from __future__ import annotations

from pathlib import Path

TENSORBOARD = "tensorboard"


def marks_run(path: Path) -> Path | None:
    """An event file in a `tensorboard/` folder marks the folder above it."""
    marked = path.name.startswith("events.out.tfevents") and path.parent.name == TENSORBOARD
    return path.parent.parent if marked else None
