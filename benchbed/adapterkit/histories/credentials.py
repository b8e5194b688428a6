"""Credentials a tracker's history holds although nobody exported them here (a `--logger.wandb.key` inside the
W&B config's Namespace repr, an `hf_token` MLflow param, a key on the command line in wandb-metadata.json): found
in the history's config and text files, and masked in its config before any adapter sees it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.history import History, HistoryError
from benchbed.secrets import find_secrets, redact, redact_values

# Files a scan never decodes: record logs and databases (binary; what they hold comes back through the config).
_BINARY_SUFFIXES = (".wandb", ".db", ".sqlite", ".parquet")
_SCAN_LIMIT = 64 << 20  # bytes: larger text files are masked by value on copy, not scanned for new credentials


def history_secrets(history: History) -> dict[str, str]:
    """{credential: where it was found} over the history's config, summary, command line and local text files."""
    found = find_secrets(history.config, "config")
    find_secrets(history.summary, "summary", found)
    find_secrets({"args": history.command}, "command line", found)
    find_secrets(history.texts, "text", found)
    for path in history.files:
        data = _text_data(path)
        if isinstance(data, str):  # a file per value, named by its key (MLflow's tags/ and params/): the name counts
            find_secrets({path.name: data}, path.parent.name, found)
        elif data is not None:
            find_secrets(data, path.name, found)
    return found


def run_dir_secrets(path: Path) -> dict[str, str]:
    """{credential: where} held by the tracker files in a framework's run directory, which an ingest of the whole
    directory copies: its W&B runs' (`wandb/offline-run-*`) config, command line and text files, and its TensorBoard
    event files' text summaries and hparams."""
    from benchbed.adapterkit.histories.tensorboard import TensorboardUnavailable, event_files, read_event_file
    from benchbed.adapterkit.histories.wandb_file import find_wandb_file, read_wandb_file, run_dirs_under

    found: dict[str, str] = {}
    for events in event_files(path) if path.is_dir() else []:
        try:
            find_secrets(read_event_file(events).texts, f"{events.name} text", found)
        except TensorboardUnavailable:  # no reader: the binary files are copied only if they hold no known value
            break
    for run in run_dirs_under(path) if path.is_dir() else []:
        try:
            history = read_wandb_file(find_wandb_file(run), allow_empty=True)  # type: ignore[arg-type]
        except HistoryError:  # no wandb package, or no history at all: nothing read, nothing found
            continue
        for value, where in history_secrets(history).items():
            found.setdefault(value, f"{run.name} {where}")
    return found


def mask_history(history: History, found: dict[str, str]) -> None:
    """Mask the credentials in the history's config, summary, command line and warnings, in place."""
    values = sorted(found, key=len, reverse=True)
    history.config = redact_values(history.config, values)  # type: ignore[assignment]
    history.summary = redact_values(history.summary, values)  # type: ignore[assignment]
    history.command = [redact(a, values) for a in history.command]
    history.warnings = [redact(w, values) for w in history.warnings]


def _text_data(path: Path) -> Any:
    """The file's JSON or YAML content, its text otherwise; None for a binary, unreadable or very large file."""
    if path.suffix in _BINARY_SUFFIXES or path.name.startswith("events.out.tfevents"):
        return None
    try:
        if path.stat().st_size > _SCAN_LIMIT:
            return None
        text = path.read_bytes().decode()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix in (".yaml", ".yml"):
            import yaml  # installed with wandb and mlflow, whose files these are

            return yaml.safe_load(text)
    except Exception:  # not valid JSON/YAML, or no yaml package: scanned as text
        return text
    return text
