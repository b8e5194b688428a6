"""A rendered run keeps its TensorBoard event files under `tensorboard/`: the folder above it is the run."""

from __future__ import annotations

from pathlib import Path


def marks_run(path: Path) -> Path | None:
    if ".tfevents." not in path.name:
        return None
    return next((p.parent for p in path.parents if p.name == "tensorboard"), None)
