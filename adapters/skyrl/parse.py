"""SkyRL's W&B (or TensorBoard, MLflow) history -> the trace through its key map. The only parsing of its own: the
trainer's mode, from its keys (in fully_async and one_step_off modes eval and checkpoints run after the step's Timer
closes: `within = "after_step"` in the key map, and the kit's history_trace adds them to the step)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
# a Timer only that trainer has -> its mode; neither: the examples' one-step-off trainer
MODES = (("timing/wait_for_generation_buffer", "fully_async"), ("timing/postprocess_generator_output", "sync"))


def parse_path(path: Path) -> Trace:
    """A run directory (its `wandb/` folder), a W&B run folder or file, or another tracker's history of the run."""
    return parse_history(read_run_history(path, KEYMAP.framework, ("wandb",)))


def parse_history(history: History) -> Trace:
    mode = next((m for key, m in MODES if key in history.keys), "one_step_off")
    return history_trace(history, KEYMAP, adapter="skyrl", mode=mode)  # eval, checkpoints: within = "after_step"
