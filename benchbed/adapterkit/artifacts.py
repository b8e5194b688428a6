"""Artifact discovery: walk a run directory once and sort its files into the kinds an adapter asks for."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.handoff import HANDOFF_FILE, Handoff, read_handoff
from benchbed.errors import NotThisFrameworkError

SKIP_DIRS = frozenset({"checkpoints", "ckpt", "__pycache__", ".git", "wandb", ".venv", "node_modules"})
MAX_FILES = 20_000
# A classifier names the kinds of one file (none: not an artifact); NotThisFrameworkError: another framework's file.
Classifier = Callable[[Path], Iterable[str]]


@dataclass
class Artifacts:
    """Files by kind, the hand-off file if render left one, and why candidate files were refused."""

    root: Path
    files: dict[str, list[Path]] = field(default_factory=dict)
    handoff: Handoff | None = None
    handoff_path: Path | None = None
    rejected: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Path]:
        return self.files.get(kind, [])

    def empty(self, *kinds: str) -> bool:
        """No file of these kinds (of any kind when none is named)."""
        return not any(self.files.get(k) for k in (kinds or tuple(self.files)))


def walk(root: Path, skip_dirs: frozenset[str] = SKIP_DIRS, limit: int = MAX_FILES) -> list[Path]:
    """Every file below root (sorted; linked folders once), leaving out skipped folders, at most `limit` files."""
    out: list[Path] = []
    seen: set[str] = set()
    stack = [root]
    while stack and len(out) < limit:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir():
                if entry.name not in skip_dirs:
                    stack.append(Path(entry.path))
            elif entry.is_file():
                out.append(Path(entry.path))
    return sorted(out[:limit])


def discover(path: Path, classify: Classifier, skip_dirs: frozenset[str] = SKIP_DIRS) -> Artifacts:
    """Classify a single file, or every file under a directory; the hand-off file is read, not classified."""
    found = Artifacts(path)
    handoffs: list[Path] = []
    for file in walk(path, skip_dirs) if path.is_dir() else [path]:
        if file.name == HANDOFF_FILE:
            handoffs.append(file)
            continue
        try:
            kinds = classify(file)
        except NotThisFrameworkError as exc:
            found.rejected.append(str(exc))
            continue
        for kind in kinds:
            found.files.setdefault(kind, []).append(file)
    if handoffs:  # the run's own, not one of a nested run
        found.handoff_path = min(handoffs, key=lambda p: len(p.parts))
        found.handoff = read_handoff(found.handoff_path, found.warnings)
    return found
