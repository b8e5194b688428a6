"""Find the run directories under a path, so that ingesting a directory that holds several runs never picks one
of them silently: each adapter says which files mark a run (its `find_runs`), the walk here is shared."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

# Folders that never hold a run worth ingesting but can hold many files.
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "checkpoints", "ckpt", "wandb"})
MAX_FILES = 200_000  # stop walking a huge tree after this many files

RunMarker = Callable[[Path], Path | None]  # a file -> the run directory it marks, or None


def runs_under(root: Path, marks: RunMarker) -> list[Path]:
    """Run directories under `root` (a file: just itself), outermost first: a candidate inside another
    candidate belongs to it. Hidden folders and SKIP_DIRS are not entered."""
    root = Path(root)
    if not root.is_dir():
        return [root]
    found: set[Path] = set()
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in files:
            seen += 1
            run = marks(Path(folder) / name)
            if run is not None:
                found.add(run)
        if seen >= MAX_FILES:
            break
    outermost = [p for p in sorted(found) if not any(q != p and q in p.parents for q in found)]
    return outermost


def by_name(names: tuple[str, ...], levels_up: int = 0) -> RunMarker:
    """A marker for files with one of these names; the run directory is `levels_up` folders above the file's."""

    def marks(path: Path) -> Path | None:
        if path.name not in names:
            return None
        run = path.parent
        for _ in range(levels_up):
            run = run.parent
        return run

    return marks


def by_folder(folder: str, contains: str) -> RunMarker:
    """A marker for files whose name contains `contains`, anywhere below a folder named `folder`: the run directory
    is the folder above the nearest such folder (TensorBoard event files under a run's `tensorboard/`)."""

    def marks(path: Path) -> Path | None:
        if contains not in path.name:
            return None
        return next((parent.parent for parent in path.parents if parent.name == folder), None)

    return marks
