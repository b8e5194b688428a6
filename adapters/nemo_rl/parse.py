"""NeMo-RL's TensorBoard (or W&B, MLflow) history -> the trace through its key map. The only parsing of its own: the
trajectory collector's thread-seconds are cumulative since it started, so each becomes the step's increment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from benchbed.adapters.nemo_rl.discover import TENSORBOARD

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
CUMULATIVE = ("efficiency/idle/buffer_full_backoff_s", "efficiency/idle/generation_limit_pause_s",
              "efficiency/idle/refit_event_wait_s", "efficiency/wasted/failed_trajectory_s")  # fmt: skip


def parse_path(path: Path) -> Trace:
    """A log folder (its `tensorboard/`), a run directory (the last `logs/exp_*/tensorboard/`) or event files."""
    runs = sorted(path.glob(f"logs/exp_*/{TENSORBOARD}"), reverse=True) if path.is_dir() else []
    names = (TENSORBOARD, *(str(p.relative_to(path)) for p in runs))
    return parse_history(read_run_history(path, KEYMAP.framework, names))


def parse_history(history: History) -> Trace:
    frame = history.frame.sort_values("step", kind="stable")
    for key in (k for k in CUMULATIVE if k in frame):
        frame[key] = per_step(frame[key].to_numpy(dtype=float))
    mode = "async" if "timing/train/exposed_generation" in history.keys else "sync"  # only async_grpo_train has it
    return history_trace(dataclasses.replace(history, frame=frame), KEYMAP, adapter="nemo_rl", mode=mode)


def per_step(total: np.ndarray) -> np.ndarray:
    """Increments of a running total (NaN where not logged); a total that falls (a restarted collector) starts over."""
    logged = ~np.isnan(total)
    values = total[logged]
    before = np.concatenate([[0.0], values[:-1]])
    out = np.full_like(total, np.nan)
    out[logged] = np.where(values >= before, values - before, values)
    return out
