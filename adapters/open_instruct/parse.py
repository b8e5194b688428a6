"""open-instruct's W&B (or TensorBoard, MLflow) history -> the trace through its key map; nothing of its own to parse:
the key map's `within` carves the learners' wait for data out of `time/training`, the kit does the rest."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


def parse_path(path: Path) -> Trace:
    """A run directory (its `wandb/` folder), a W&B run folder or file, or another tracker's history of the run."""
    return parse_history(read_run_history(path, KEYMAP.framework, ("wandb",)))


def parse_history(history: History) -> Trace:
    return history_trace(history, KEYMAP, adapter="open_instruct", mode="async")
