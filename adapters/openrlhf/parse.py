"""OpenRLHF's tracker history (W&B or TensorBoard) -> the trace through keymap.toml, after what only OpenRLHF needs:
W&B rows re-keyed on `train/global_step` (the samples table takes a W&B step of its own), the mode told from the
timings (sync: step_total IS the sum of the four timing/* figures; async: a wall clock that is not), and the async
trainer's wait: step_total − make_experience − ppo_train − broadcast (its loop outside its three timers)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
GLOBAL_STEP, TOTAL, GENERATION = "train/global_step", "train/timing/step_total", "train/timing/generation"
EVAL_STEP = "eval/global_step"  # log_eval's rows carry the step here instead
TIMED = ["train/timing/make_experience", "train/timing/ppo_train", "train/timing/broadcast"]  # the trainer's timers


def parse_path(path: Path) -> Trace:
    return parse_history(read_run_history(path, KEYMAP.framework, ("tensorboard", "wandb")))


def parse_history(history: History) -> Trace:
    history = by_global_step(history)
    frame = history.frame.reindex(columns=[*history.frame.columns, *{TOTAL, GENERATION, *TIMED} - {*history.keys}])
    rest = frame[TOTAL] - frame[TIMED].sum(axis=1, min_count=len(TIMED))
    both = rest.notna() & frame[GENERATION].notna()  # TensorBoard keeps float32: equal to 1e-5
    sync = both.any() and np.allclose(rest[both], frame[GENERATION][both], rtol=1e-5, atol=1e-3)
    trace = history_trace(history, KEYMAP, adapter="openrlhf", mode="sync" if sync else "async")
    if sync:
        return trace
    rows = {"key": "trainer.wait", "kind": "agg", "step": frame[STEP], "value": rest.clip(lower=0.0)}
    wait = pd.DataFrame(rows).assign(actor="trainer")[rest.notna()]
    return Trace(pd.concat([trace.events, wait], ignore_index=True), trace.meta)


def by_global_step(history: History) -> History:
    """W&B rows keyed on `train/global_step` (an evaluation's on `eval/global_step`), WandbLogger's step metrics,
    one row per step (TensorBoard's are)."""
    frame = history.frame
    if GLOBAL_STEP not in frame:
        return history
    steps = frame[GLOBAL_STEP].fillna(frame[EVAL_STEP]) if EVAL_STEP in frame else frame[GLOBAL_STEP]
    table = [k for k in history.keys if k.startswith("train/generated_samples")]  # the W&B table's size, a step early
    figures = [k for k in history.keys if k not in (GLOBAL_STEP, EVAL_STEP) and k not in table]
    frame = frame.assign(**{GLOBAL_STEP: steps}).drop(columns=[*table, *({EVAL_STEP} & set(frame))])
    frame = frame.dropna(subset=figures, how="all").dropna(subset=[GLOBAL_STEP])
    frame = frame.assign(**{STEP: frame[GLOBAL_STEP].astype("int64")}).drop(columns=[GLOBAL_STEP])
    return replace(history, frame=frame.groupby(STEP, as_index=False, sort=True).first())
