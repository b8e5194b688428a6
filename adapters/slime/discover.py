"""Which files of a run are slime's: console logs, TensorBoard event files and rollout dumps."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.slime.dumps import DUMP_NAME

from benchbed.adapterkit.artifacts import Artifacts, discover

LOGS, EVENTS, DUMPS = "logs", "events", "dumps"
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
LOG_NAMES = ("stdout", "stderr", "output", "console")


def _classify(path: Path) -> list[str]:
    name = path.name
    if name.startswith("events.out.tfevents"):
        return [EVENTS]
    if DUMP_NAME.match(name):
        return [DUMPS]
    if name.endswith(LOG_SUFFIXES) or name in LOG_NAMES:
        return [LOGS]
    return []


def _classify_file(path: Path) -> list[str]:
    """A file named on the command line is taken for what its name says; any other .pt file is read as a dump and
    any other file as console output."""
    return _classify(path) or ([DUMPS] if path.suffix == ".pt" else [LOGS])


def classify_in_dir(path: Path) -> list[str]:
    """The kinds of a file found under a run directory (evaluation dumps are not the run's)."""
    return [] if "eval_" in path.name and path.suffix == ".pt" else _classify(path)


def find_artifacts(path: Path) -> Artifacts:
    """Classify a single file, or every file under a run directory."""
    return discover(path, classify_in_dir if path.is_dir() else _classify_file)


def marks_run(path: Path) -> Path | None:
    """The run directory a slime file marks (for `find_runs`): its folder, or the one above a run's tensorboard*/
    and *dump*/ folders."""
    if not classify_in_dir(path):
        return None
    folder = path.parent
    return folder.parent if folder.name.startswith("tensorboard") or "dump" in folder.name else folder
