"""Find slime artifacts under a path: console logs, TensorBoard event files, rollout dumps, benchbed's manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapters.slime.dumps import DUMP_NAME
from benchbed.adapters.slime.runargs import MANIFEST

LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
LOG_NAMES = ("stdout", "stderr", "output", "console")
_MAX_FILES = 20000


@dataclass
class Artifacts:
    logs: list[Path] = field(default_factory=list)
    events: list[Path] = field(default_factory=list)
    dumps: list[Path] = field(default_factory=list)
    manifest: Path | None = None

    def empty(self) -> bool:
        return not (self.logs or self.events or self.dumps)


def classify(path: Path, found: Artifacts) -> None:
    name = path.name
    if name.startswith("events.out.tfevents"):
        found.events.append(path)
    elif DUMP_NAME.match(name):
        found.dumps.append(path)
    elif name == MANIFEST:
        found.manifest = path
    elif name.endswith(LOG_SUFFIXES) or name in LOG_NAMES:
        found.logs.append(path)


def discover(path: Path) -> Artifacts:
    """A single file is taken for what its name says (any other text file is read as console output)."""
    found = Artifacts()
    if path.is_file():
        classify(path, found)
        if found.empty() and found.manifest is None and path.suffix != ".pt":
            found.logs.append(path)
        elif path.suffix == ".pt" and not found.dumps:
            found.dumps.append(path)
        return found
    for i, child in enumerate(sorted(p for p in path.rglob("*") if p.is_file())):
        if i >= _MAX_FILES:
            break
        if "eval_" in child.name and child.suffix == ".pt":
            continue
        classify(child, found)
    return found
