"""SkyRL's W&B (or TensorBoard, MLflow) history -> the trace through its key map. The only parsing of its own: in
fully_async and one_step_off modes eval and checkpoints run after the step's Timer closes, so they join the step."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.trace import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
STEP = "timing/step"
# a Timer only that trainer has -> its mode; neither: the examples' one-step-off trainer
MODES = (("timing/wait_for_generation_buffer", "fully_async"), ("timing/postprocess_generator_output", "sync"))


def parse_path(path: Path) -> Trace:
    """A run directory (its `wandb/` folder), a W&B run folder or file, or another tracker's history of the run."""
    return parse_history(read_run_history(path, KEYMAP.framework, ("wandb",)))


def parse_history(history: History) -> Trace:
    mode = next((m for key, m in MODES if key in history.keys), "one_step_off")
    after = [
        k for k in KEYMAP.mapping(KEYMAP.releases[-1], "component", mode, within="after_step") if k in history.keys
    ]
    frame = history.frame
    if after and STEP in frame:
        frame = frame.assign(**{STEP: frame[STEP] + frame[after].fillna(0.0).sum(axis=1)})
    return history_trace(dataclasses.replace(history, frame=frame), KEYMAP, adapter="skyrl", mode=mode)
