"""Turn a SimOutcome into the canonical trace, column-wise (no per-row Python work)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchbed
from benchbed import keys as K
from benchbed.sim.engine import ABORTED, OK, STATUS_NAMES, SimOutcome, SimParams
from benchbed.trace import COLUMNS, Trace, TraceMeta

_ROLLOUT_STATUS = (*STATUS_NAMES, "failed")


def _frame(n: int, **columns: object) -> pd.DataFrame:
    """A block of events with defaults for the columns not given."""
    defaults: dict[str, object] = {
        "step": -1, "t0": np.nan, "t1": np.nan, "value": np.nan, "actor": "", "sample": "", "group": "",
        "v_start": -1, "v_end": -1, "v_train": -1, "status": "", "attrs": "",
    }  # fmt: skip
    data = {}
    for col in COLUMNS:
        value = columns.get(col, defaults.get(col))
        data[col] = value if isinstance(value, np.ndarray | pd.Series | pd.Categorical) else np.full(n, value)
    return pd.DataFrame(data)


def _rollouts(out: SimOutcome, params: SimParams) -> pd.DataFrame:
    G = params.group_size
    n = len(out.sample_t1)
    group = np.arange(n) // G
    in_flight = np.isnan(out.sample_t1)
    group_status = out.group_status[group]
    status = np.where(in_flight, ABORTED, group_status).astype(np.int8)
    t1 = np.where(in_flight, out.end_time, out.sample_t1)
    v_train = out.group_v_train[group]
    slot_names = [f"slot/{i}" for i in range(params.config.concurrency)]
    return _frame(
        n,
        key=pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [K.ROLLOUT]),
        kind=pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["span"]),
        step=np.where(status == OK, np.where(v_train >= 0, v_train + 1, -1), out.group_step[group]),
        t0=out.group_t0[group],
        t1=t1,
        value=out.sample_reward,
        actor=pd.Categorical.from_codes(out.sample_slot, slot_names),
        sample=pd.Series(np.arange(n)).astype(str).to_numpy(),
        group=pd.Series(group).astype(str).to_numpy(),
        v_start=out.group_v_start[group],
        v_end=np.where(in_flight, -1, out.sample_v_end),
        v_train=v_train,
        status=pd.Categorical.from_codes(status, list(_ROLLOUT_STATUS)),
    )


def _groups(out: SimOutcome) -> pd.DataFrame:
    done = np.flatnonzero(~np.isnan(out.group_done_t))
    n = len(done)
    return _frame(
        n,
        key=K.ROLLOUT_GROUP,
        kind="point",
        step=out.group_step[done],
        t0=out.group_done_t[done],
        value=out.group_reward_std[done],
        actor="generator",
        group=pd.Series(done).astype(str).to_numpy(),
        v_start=out.group_v_start[done],
        v_train=out.group_v_train[done],
        status=pd.Categorical.from_codes(out.group_status[done], list(_ROLLOUT_STATUS)),
    )


def _trainer(out: SimOutcome) -> pd.DataFrame:
    n = len(out.step_end)
    steps = np.arange(1, n + 1)
    phases = [
        (K.TRAINER_WAIT, out.step_start, out.step_batch_ready),
        (K.TRAINER_COMPUTE, out.step_batch_ready, out.step_compute_end),
        (K.TRAINER_WEIGHT_SYNC, out.step_compute_end, out.step_end),
        (K.TRAINER_STEP, out.step_start, out.step_end),
    ]
    return pd.concat(
        [_frame(n, key=key, kind="span", step=steps, t0=t0, t1=t1, actor="trainer") for key, t0, t1 in phases],
        ignore_index=True,
    )


def _paused(out: SimOutcome) -> pd.DataFrame:
    spans = np.asarray(out.paused, dtype=float).reshape(-1, 2)
    return _frame(len(spans), key=K.GENERATOR_PAUSED, kind="span", t0=spans[:, 0], t1=spans[:, 1], actor="generator")


def outcome_to_trace(out: SimOutcome, params: SimParams) -> Trace:
    cfg = params.config
    mode = cfg.mode if cfg.mode != "async" else f"async/{cfg.staleness_policy}"
    frames = [_trainer(out), _paused(out), _groups(out), _rollouts(out, params)]
    events = pd.concat(frames, ignore_index=True)
    for col in ("key", "kind", "actor", "status"):
        if not isinstance(events[col].dtype, pd.CategoricalDtype):
            events[col] = events[col].astype("category")
    meta = TraceMeta(
        adapter="sim",
        framework="benchbed-sim",
        framework_version=benchbed.__version__,
        mode=mode,
        concurrency=cfg.concurrency,
        samples_per_step=params.samples_per_step,
        group_size=params.group_size,
        extra={"end_time_s": out.end_time, "seed": cfg.seed},
    )
    return Trace(events, meta)
