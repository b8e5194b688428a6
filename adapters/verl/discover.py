"""Which files of a run are verl's: file-logger JSONL, console logs, rollout dumps, Ray worker logs, Hydra config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbed.adapters.verl.records import is_file_logger_jsonl
from benchbed.adapters.verl.rollouts import is_rollout_dump
from benchbed.adapters.verl.worker_logs import might_hold_failures

from benchbed.adapterkit.artifacts import SKIP_DIRS, Artifacts, discover
from benchbed.adapterkit.histories.console import looks_like_console
from benchbed.api import NotThisFrameworkError

JSONL, CONSOLE, ROLLOUT_DUMPS, WORKER_LOGS, HYDRA_CONFIG = "jsonl", "console", "rollout_dumps", "worker_logs", "hydra"
_LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
_SKIP_DIRS = SKIP_DIRS | {"tensorboard_log"}


def _classify_in_dir(path: Path) -> list[str]:
    name = path.name
    if name == "config.yaml" and path.parent.name == ".hydra":
        return [HYDRA_CONFIG]
    if name.endswith(".jsonl"):
        if is_rollout_dump(path):
            return [ROLLOUT_DUMPS]
        return [JSONL] if is_file_logger_jsonl(path) else []
    if name.endswith(_LOG_SUFFIXES):
        return [kind for kind, ok in ((WORKER_LOGS, might_hold_failures), (CONSOLE, looks_like_console)) if ok(path)]
    return []


def _classify_file(path: Path) -> list[str]:
    """A file named on the command line: JSONL of the file logger, else whatever its text shows."""
    if is_file_logger_jsonl(path):  # NotThisFrameworkError for JSON lines of another shape
        return [JSONL]
    return [kind for kind, ok in ((CONSOLE, looks_like_console), (WORKER_LOGS, might_hold_failures)) if ok(path)]


def find_artifacts(path: Path) -> Artifacts:
    """Classify a single file, or every candidate under a run directory (checkpoints and wandb are not read)."""
    if path.is_dir():
        return discover(path, _classify_in_dir, _SKIP_DIRS)
    return discover(path, _classify_file)


def read_hydra_config(path: Path) -> dict[str, Any] | None:
    """Hydra's saved config, when PyYAML is importable (it comes with verl); else None."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        value = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return value if isinstance(value, dict) else None


def marks_run(path: Path) -> Path | None:
    """A verl file-logger JSONL marks its folder as a run (for `find_runs`)."""
    if path.suffix != ".jsonl":
        return None
    try:
        return path.parent if is_file_logger_jsonl(path) else None
    except (NotThisFrameworkError, OSError):
        return None
