"""Find a verl run's artifacts: file-logger JSONL, console logs, rollout dumps, Ray worker logs, configs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.verl.records import is_file_logger_jsonl, looks_like_console
from benchbed.adapters.verl.rollouts import is_rollout_dump
from benchbed.adapters.verl.worker_logs import might_hold_failures

from benchbed.errors import NotThisFrameworkError

PLAN_FILE = "benchbed-verl.json"
_LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
_SKIP_DIRS = {"checkpoints", "ckpt", "__pycache__", ".git", "wandb", "tensorboard_log"}


@dataclass
class Artifacts:
    jsonl: list[Path] = field(default_factory=list)
    console: list[Path] = field(default_factory=list)
    rollout_dumps: list[Path] = field(default_factory=list)
    worker_logs: list[Path] = field(default_factory=list)
    hydra_config: Path | None = None
    plan: dict[str, Any] | None = None
    rejected: list[str] = field(default_factory=list)


def _walk(root: Path) -> list[Path]:
    out = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                if entry.name not in _SKIP_DIRS:
                    stack.append(entry)
            elif entry.is_file():
                out.append(entry)
    return sorted(out)


def discover(root: Path) -> Artifacts:
    """Classify every candidate file under a run directory (checkpoints and wandb are not read)."""
    found = Artifacts()
    for path in _walk(root):
        name = path.name
        if name == PLAN_FILE:
            try:
                found.plan = json.loads(path.read_text())
            except ValueError:
                found.rejected.append(f"{path}: unreadable benchbed plan file")
        elif name == "config.yaml" and path.parent.name == ".hydra":
            found.hydra_config = path
        elif name.endswith(".jsonl"):
            if is_rollout_dump(path):
                found.rollout_dumps.append(path)
                continue
            try:
                if is_file_logger_jsonl(path):
                    found.jsonl.append(path)
            except NotThisFrameworkError as exc:
                found.rejected.append(str(exc).removeprefix("not a verl log: "))
        elif name.endswith(_LOG_SUFFIXES):
            if might_hold_failures(path):
                found.worker_logs.append(path)
            if looks_like_console(path):
                found.console.append(path)
    return found


def read_hydra_config(path: Path) -> dict[str, Any] | None:
    """Hydra's saved config, when PyYAML is importable (it comes with verl); else None."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        value = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    return value if isinstance(value, dict) else None
