"""OpenRLHF's tracker history (W&B or TensorBoard) -> the trace through keymap.toml, after two things only OpenRLHF
needs: W&B rows re-keyed on `train/global_step` (the samples table takes a W&B step of its own), and the mode told
from the timings (sync: step_total IS the sum of the four timing/* figures; async: a wall clock that is not)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.adapterkit.rows import AggRows
from benchbed.trace import Trace, TraceBuilder

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
GLOBAL_STEP, TOTAL, GENERATION = "train/global_step", "train/timing/step_total", "train/timing/generation"
TIMED = ("train/timing/make_experience", "train/timing/ppo_train", "train/timing/broadcast")  # the trainer's timers


def parse_path(path: Path) -> Trace:
    return parse_history(read_run_history(path, KEYMAP.framework, ("tensorboard", "wandb")))


def parse_history(history: History) -> Trace:
    history = by_global_step(history)
    frame = history.frame
    rest = frame.reindex(columns=list(TIMED)).sum(axis=1)
    mode = "sync" if TOTAL in frame and _same(frame[TOTAL], rest + frame.get(GENERATION, np.nan)) else "async"
    trace = history_trace(history, KEYMAP, adapter="openrlhf", mode=mode)
    if mode == "sync":
        return trace
    # Async: the trainer's loop outside its three timers (its wait on the rollout queue, the hand-over of the
    # batch to the actor shards): step_total − make_experience − ppo_train − broadcast.
    known = frame[TOTAL].notna() & frame.reindex(columns=list(TIMED)).notna().all(axis=1)
    rows, builder = AggRows(), TraceBuilder()
    wait = (frame[TOTAL] - rest).clip(lower=0.0)[known]
    rows.extend("trainer.wait", frame[STEP][known].to_numpy(), wait.to_numpy(), actor="trainer")
    rows.flush(builder)
    return Trace(pd.concat([trace.events, builder.build(trace.meta).events], ignore_index=True), trace.meta)


def by_global_step(history: History) -> History:
    """W&B rows keyed on `train/global_step`, one row per step (WandbLogger's step metric); TensorBoard's already
    are."""
    frame = history.frame
    if GLOBAL_STEP not in frame:
        return history
    table = [k for k in history.keys if k.startswith("train/generated_samples")]  # the W&B table's size, a step early
    figures = [k for k in history.keys if k != GLOBAL_STEP and k not in table]
    frame = frame.drop(columns=table).dropna(subset=figures, how="all").dropna(subset=[GLOBAL_STEP])
    frame = frame.assign(**{STEP: frame[GLOBAL_STEP].astype("int64")}).drop(columns=[GLOBAL_STEP])
    return replace(history, frame=frame.groupby(STEP, as_index=False, sort=True).first())


def _same(logged: pd.Series, summed: pd.Series) -> bool:
    """Whether every logged step_total is the sum (TensorBoard keeps float32: equal to 1e-5)."""
    both = logged.notna() & summed.notna()
    return bool(both.any()) and bool(np.allclose(logged[both], summed[both], rtol=1e-5, atol=1e-3))
