"""Which history source a location is, and opening it: paths are told apart by what they hold, URIs by scheme;
a location no built-in source recognises goes to the registered history sources (reader.py). Credentials in a
URI (a password, a token in the query) never reach the History's `source.uri`."""

from __future__ import annotations

import os
import re
from pathlib import Path

from benchbed.adapterkit.histories.history import History, HistoryError, Progress
from benchbed.adapterkit.histories.reader import HISTORY_SOURCES, outside_kind

WANDB, WANDB_CLOUD, MLFLOW, TENSORBOARD = "wandb", "wandb-cloud", "mlflow", "tensorboard"
JSONL, CONSOLE = "jsonl", "console"
TRACKERS = (
    WANDB,
    WANDB_CLOUD,
    MLFLOW,
    TENSORBOARD,
)  # sources only a tracker writes (JSONL, CONSOLE: a framework's own)
MLFLOW_SCHEMES = ("http", "https", "mlflow", "sqlite", "postgresql", "mysql", "mssql", "file", "runs")
EVENT_FILE = "events.out.tfevents"
_SCAN_LIMIT = 2000  # files looked at to decide whether a folder holds only event files


def _scheme(location: str) -> str:
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):", location)
    return match.group(1).lower() if match and len(match.group(1)) > 1 else ""  # "C:" is a drive, not a scheme


def history_kind(location: str | Path) -> str | None:
    """The source a location is read by (WANDB, WANDB_CLOUD, MLFLOW, TENSORBOARD, JSONL, CONSOLE, or a registered
    history source's name), or None when it is not a history: a run directory of framework logs, a log without
    `step:N - key:value` lines."""
    return _builtin_kind(location) or outside_kind(location)


def _builtin_kind(location: str | Path) -> str | None:
    text = str(location)
    scheme = _scheme(text)
    if scheme == "wandb":
        return WANDB_CLOUD
    if scheme in MLFLOW_SCHEMES and not isinstance(location, Path):
        return MLFLOW
    path = Path(location)
    if path.is_file():
        if path.suffix == ".wandb":
            return WANDB
        if path.name.startswith(EVENT_FILE):
            return TENSORBOARD
        if path.suffix == ".db" and _is_sqlite(path):
            return MLFLOW
        if path.suffix == ".jsonl":
            return JSONL
        from benchbed.adapterkit.histories.console import looks_like_console

        return CONSOLE if looks_like_console(path) else None
    if not path.is_dir():
        return None
    from benchbed.adapterkit.histories.wandb_file import find_wandb_file, run_dirs_under

    if find_wandb_file(path) is not None or (path.name == "wandb" and run_dirs_under(path)):
        return WANDB
    if _is_mlflow_store(path):
        return MLFLOW
    if _only_event_files(path):
        return TENSORBOARD
    return None


def open_history(location: str | Path, progress: Progress | None = None, timeout_s: float = 30.0) -> History:
    """The history at `location` (see the package docstring for the forms); HistoryError says why not, in one line.
    `progress` is called as rows arrive from a remote source; `timeout_s` bounds each request to a server."""
    kind = history_kind(location)
    if kind == WANDB_CLOUD:
        from benchbed.adapterkit.histories.wandb_cloud import read_wandb_cloud

        return read_wandb_cloud(str(location), progress=progress, timeout_s=timeout_s)
    if kind == MLFLOW:
        from benchbed.adapterkit.histories.mlflow_runs import read_mlflow

        return read_mlflow(location, progress=progress, timeout_s=timeout_s)
    path = Path(location)
    if kind in HISTORY_SOURCES:
        return HISTORY_SOURCES.load(kind)().open(location, progress=progress, timeout_s=timeout_s)
    if kind == WANDB:
        return _open_wandb(path)
    if kind == TENSORBOARD:
        from benchbed.adapterkit.histories.tensorboard import read_tensorboard

        return read_tensorboard(path)
    if kind == JSONL:
        from benchbed.adapterkit.histories.jsonl import read_jsonl_history

        return read_jsonl_history(path)
    if kind == CONSOLE:
        from benchbed.adapterkit.histories.console import read_console_history

        return read_console_history(path)
    if not path.exists():
        raise HistoryError(f"{location}: no such file or directory, and not a wandb:// or MLflow URI")
    raise HistoryError(
        f"{location}: not a run history (no W&B run, MLflow store, TensorBoard event file, metrics JSONL or "
        "`step:N - key:value` console lines found)"
    )


def _open_wandb(path: Path) -> History:
    from benchbed.adapterkit.histories.wandb_file import find_wandb_file, read_wandb_file, run_dirs_under

    found = find_wandb_file(path)
    if found is None:
        runs = run_dirs_under(path)
        if len(runs) > 1:
            from benchbed.adapterkit.histories.wandb_job import read_wandb_job

            return read_wandb_job(path, runs)
        found = find_wandb_file(runs[0])
    assert found is not None
    return read_wandb_file(found)


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _is_mlflow_store(path: Path) -> bool:
    """An MLflow file store (`mlruns/`: experiment folders with meta.yaml), or one run's folder in it."""
    if (path / "meta.yaml").is_file() and (path / "metrics").is_dir():
        return True
    try:
        return any((child / "meta.yaml").is_file() for child in path.iterdir() if child.is_dir())
    except OSError:
        return False


def _only_event_files(path: Path) -> bool:
    """A folder whose files (looked at recursively, hidden ones aside) are all TensorBoard event files."""
    seen = 0
    for _, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            if not name.startswith(EVENT_FILE):
                return False
            seen += 1
            if seen > _SCAN_LIMIT:
                return True
    return seen > 0
