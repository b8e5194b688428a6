"""Recognise a pasted W&B run summary: final values only, so no adapter can make a per-step trace of it.

Two forms: the content of `wandb-summary.json` (one JSON object, W&B's `_step`, `_runtime`, `_timestamp` or
`_wandb` keys beside the metrics' last values) and the `Run summary:` block wandb prints when a run finishes
(`wandb: Run summary:` then one `wandb: KEY VALUE` line per metric, keys right-aligned)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchbed.logtext import split_ray_line

MAX_BYTES = 20_000_000  # a summary is small; a bigger file is something else
_W_AND_B_KEYS = ("_wandb", "_runtime", "_timestamp", "_step")
_BLOCK_START = re.compile(r"^wandb:\s+Run summary:\s*$")
_BLOCK_LINE = re.compile(r"^wandb:\s+(?P<key>\S+)\s+\S.*$")


def summary_keys(path: Path, whole: bool = False) -> list[str] | None:
    """The metric keys of the W&B run summary in file `path` (W&B's own `_` keys left out), or None when the file
    is no summary; with `whole`, only a file that holds nothing else (every line of a block form is wandb's)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_text(errors="replace")
    except OSError:
        return None
    if text.lstrip().startswith("{"):
        return _json_keys(text)
    return _block_keys(text, whole)


def _json_keys(text: str) -> list[str] | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # a value nested too deep is no summary either
        return None
    if not isinstance(obj, dict) or not any(k in obj for k in _W_AND_B_KEYS):
        return None
    return [k for k in obj if not k.startswith("_")]


def _block_keys(text: str, whole: bool) -> list[str] | None:
    """The keys of the last `Run summary:` block (colours and Ray prefixes removed)."""
    lines = [split_ray_line(line)[2].rstrip() for line in text.splitlines()]
    if whole and not all(line.startswith("wandb:") for line in lines if line.strip()):
        return None
    starts = [i for i, line in enumerate(lines) if _BLOCK_START.match(line)]
    if not starts:
        return None
    keys = []
    for line in lines[starts[-1] + 1 :]:
        match = _BLOCK_LINE.match(line)
        if match is None:
            break
        keys.append(match.group("key"))
    return [k for k in keys if not k.startswith("_")] or None


def summary_message(path: Path, keys: list[str], adapters: list[str]) -> str:
    """The one line that refuses a summary: what it is, whose keys it holds, and what to ingest instead."""
    whose = f" with {', '.join(adapters)} keys" if adapters else ""
    shown = ", ".join(keys[:5]) + (" ..." if len(keys) > 5 else "")
    return (
        f"{path}: a W&B run summary{whose} ({shown}): final values only, no per-step history; ingest the run's "
        "history instead (its wandb/run-* directory, a run-*.wandb file, or wandb://ENTITY/PROJECT/RUN_ID)"
    )
