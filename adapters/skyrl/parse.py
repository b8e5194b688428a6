"""SkyRL's W&B (or TensorBoard, MLflow) history -> the trace through its key map (in fully_async mode eval and
checkpoints run after the step's Timer closes: `within = "after_step"` adds them to the step)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.trace import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


def parse_path(path: Path) -> Trace:
    """A run directory (its `wandb/` folder), a W&B run folder or file, or another tracker's history of the run."""
    return parse_history(read_run_history(path, KEYMAP.framework, ("wandb",)))


def parse_history(history: History) -> Trace:
    mode = "fully_async" if "timing/wait_for_generation_buffer" in history.keys else "sync"  # only that trainer has it
    return history_trace(history, KEYMAP, adapter="skyrl", mode=mode)  # eval, checkpoints: within = "after_step"
