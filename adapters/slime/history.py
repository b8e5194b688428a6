"""A tracker's history of a slime run (its W&B runs: the rollout manager's and the trainer's, which resume the
driver's run id) -> the trace, through the same per-rollout dicts as the console log: each history row is one
`logging_utils.log` call, on slime's own step axes (`rollout/step`, `train/step`, `eval/step`), but APRIL's
`partial_rollout/*` dict, which belongs to the trainer's `rollout N:` dict logged just before it."""

from __future__ import annotations

from typing import Any

from benchbed.adapters.slime import keymap as M
from benchbed.adapters.slime.collect import Collected, partial_rollout_figures, rollout_id_of
from benchbed.adapters.slime.detect import detect_mode
from benchbed.adapters.slime.emit import build_trace
from benchbed.adapters.slime.runargs import from_config
from benchbed.adapters.slime.trainer import Perf

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.history import PART
from benchbed.adapterkit.history_trace import built_history_trace
from benchbed.api import NotThisFrameworkError, Trace

ROLLOUT_STEP, TRAIN_STEP, EVAL_STEP = "rollout/step", "train/step", "eval/step"


def parse_history(history: History) -> Trace:
    """The trace of the per-rollout dicts `collect_history` reads."""
    return built_history_trace(history, _build)


def _build(history: History) -> Trace:
    c = collect_history(history)
    return build_trace(c, detect_mode(c))


def collect_history(history: History) -> Collected:
    """Rows are read per process (run), in the order that process logged them: a trainer `perf` dict takes the
    `train/*` rows logged before it, as in the console log. Wall times are the tracker's (epoch) clock; the run
    starts when the tracker says it did."""
    uri = history.source.uri
    c = Collected(warnings=list(history.warnings), partial=history.partial, sources=[uri])
    c.args = from_config(history.config, f"{uri} (W&B run config)")
    c.saw(history.started)  # the driver's wandb.init, right after slime parsed its arguments (the console's first line)
    parts = history.frame[PART].to_numpy() if PART in history.frame else None
    pending: dict[Any, list[dict[str, float]]] = {}
    trained_rollout: dict[Any, int] = {}  # per process: the rollout id of its last `rollout N:` dict
    for i, (step, wall, values) in enumerate(history.rows()):
        part = None if parts is None else parts[i]
        where = f"{uri} ({part} step {step})" if part is not None else f"{uri} (step {step})"
        ts = float("nan") if wall is None else wall
        if TRAIN_STEP in values:
            pending.setdefault(part, []).append(values)
        elif EVAL_STEP in values:
            c.other_dicts[("eval", int(values.pop(EVAL_STEP)))] = values
        elif ROLLOUT_STEP in values:
            rid = rollout_id_of(c, int(values.pop(ROLLOUT_STEP)))
            if any(k in values for k in M.TRAINER_PERF_MARKERS):
                c.trainer_perf[rid] = Perf(values, ts, where, "epoch")
                c.train_steps[rid] = pending.pop(part, [])
                c.saw(ts)
            elif any(k in values for k in M.ROLLOUT_PERF_MARKERS):
                c.rollout_perf[rid] = Perf(values, ts, where, "epoch")
                c.saw(ts)
            else:
                c.trainer_rollout[rid] = values
                trained_rollout[part] = rid
        elif part in trained_rollout and any(k in values for k in M.PARTIAL_ROLLOUT_KEYS):
            # APRIL logs its `partial_rollout N:` dict right after the trainer's `rollout N:`, on no axis of its own
            c.other_dicts[("partial_rollout", trained_rollout[part])] = partial_rollout_figures(
                values, where, c.warnings
            )
    if not (c.trainer_perf or c.rollout_perf):
        raise NotThisFrameworkError(
            f"not a slime history: {uri}: no row on slime's `rollout/step` axis carries its trainer "
            f"({', '.join(M.TRAINER_PERF_MARKERS)}) or rollout manager ({', '.join(M.ROLLOUT_PERF_MARKERS)}) keys"
        )
    return c
