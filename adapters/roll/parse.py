"""ROLL's tracker history (TensorBoard or W&B) -> the trace through keymap.toml, after what only ROLL needs: its
steps (from 0) renumbered from 1, and each step's `time/step_total` taken from the next row, where ROLL logs it
(`pre_step_total_time`: 0 at a (re)start, and the last step's never); steps left without a total are dropped."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import Trace

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
TOTAL, RATIO, OFF_POLICY = "time/step_total", "async_generation_ratio", "scheduler/off_policy_ratio"


def parse_path(path: Path) -> Trace:
    return parse_history(read_run_history(path, KEYMAP.framework, ("tensorboard", "wandb")))


def parse_history(history: History) -> Trace:
    history = renumbered(history)
    ratio = history.config.get(RATIO)  # the run's config (W&B); TensorBoard keeps it as hparams, not read here
    known = isinstance(ratio, int | float)
    ahead = ratio > 0 if known else OFF_POLICY in history.frame and history.frame[OFF_POLICY].max() > 0
    extra = {RATIO: ratio} if known else {}
    return history_trace(history, KEYMAP, adapter="roll", mode="async" if ahead else "sync", extra=extra)


def renumbered(history: History) -> History:
    """Steps from 1, each with its own `time/step_total`; steps without one (the last, any before a restart) left
    out, named in one warning."""
    frame = history.frame.groupby(STEP, as_index=False, sort=True).first()  # TensorBoard: one row per file and step
    if TOTAL not in frame:
        return history  # history_trace says it is not ROLL's
    totals = frame.set_index(STEP)[TOTAL]
    frame[STEP] = frame[STEP] + 1
    frame[TOTAL] = frame[STEP].map(totals.where(totals > 0))
    missing = frame[STEP][frame[TOTAL].isna()].tolist()
    warnings = list(history.warnings)
    if missing:
        warnings.append(f"{history.source.uri}: ROLL logs a step's time/step_total at the next step; step(s) "
                        f"{', '.join(map(str, missing))} have none and are left out")  # fmt: skip
    return replace(history, frame=frame[frame[TOTAL].notna()], warnings=warnings)
