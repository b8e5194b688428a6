"""rLLM's W&B (or TensorBoard, MLflow) history -> the trace through its key map. The only parsing of its own: the
trainer's mode, from its keys, and the validation before training, which rLLM logs at step 0 (the trace counts steps
from 1), left out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
FULLY_ASYNC = "time/buffer_wait"  # only the fully async training loop (_training_loop) logs it


def parse_path(path: Path) -> Trace:
    """A run directory (its `wandb/` folder), a W&B run folder or file, or another tracker's history of the run."""
    return parse_history(read_run_history(path, KEYMAP.framework, ("wandb",)))


def parse_history(history: History) -> Trace:
    mode = "fully_async" if FULLY_ASYNC in history.keys else "on_policy"
    frame = history.frame[history.frame[STEP] >= 1]
    return history_trace(dataclasses.replace(history, frame=frame), KEYMAP, adapter="rllm", mode=mode)
