"""Turn a SimOutcome into the canonical trace, column-wise (no per-row Python work).

Categorical columns share one category list per column across all blocks, and string columns are built as
Arrow strings, so concatenating a million-sample trace costs no conversions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

import benchbed
from benchbed import keys as K
from benchbed.sim.engine import (
    ABORTED,
    OK,
    SANDBOX_QUEUE_ROW,
    SANDBOX_START_ROW,
    SANDBOX_STATUSES,
    STATUS_NAMES,
    SimOutcome,
    SimParams,
)  # fmt: skip
from benchbed.trace import COLUMNS, Trace, TraceMeta

_KEYS = [K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_STEP, K.GENERATOR_PAUSED,
         K.ROLLOUT_GROUP, K.ROLLOUT, K.SANDBOX_QUEUE, K.SANDBOX_START, K.SAMPLES_PARTIAL_BUFFERED]  # fmt: skip
_KINDS = ["span", "point", "agg"]
_STATUSES = ["", *STATUS_NAMES, *SANDBOX_STATUSES[1:]]
_SANDBOX_STATUS_CODES = np.array([STATUS_NAMES.index("ok"), *range(len(STATUS_NAMES), len(_STATUSES) - 1)])


class _Blocks:
    """Builds event blocks whose categorical columns all use the same categories."""

    def __init__(self, concurrency: int) -> None:
        self.actors = ["trainer", "generator", "sandboxes", *(f"slot/{i}" for i in range(concurrency))]

    def frame(self, n: int, key: str, kind: str, actor: str | np.ndarray, status: np.ndarray | None = None,
              **columns: np.ndarray) -> pd.DataFrame:  # fmt: skip
        """A block of n events; `actor` is a name or an array of codes into self.actors."""
        actor_codes = np.full(n, self.actors.index(actor), dtype=np.int32) if isinstance(actor, str) else actor
        data: dict[str, object] = {
            "key": pd.Categorical.from_codes(np.full(n, _KEYS.index(key), dtype=np.int8), _KEYS),
            "kind": pd.Categorical.from_codes(np.full(n, _KINDS.index(kind), dtype=np.int8), _KINDS),
            "actor": pd.Categorical.from_codes(actor_codes, self.actors),
            "status": pd.Categorical.from_codes(
                np.zeros(n, dtype=np.int8) if status is None else status + 1, _STATUSES
            ),
        }
        defaults = {"step": -1, "t0": np.nan, "t1": np.nan, "value": np.nan, "v_start": -1, "v_end": -1, "v_train": -1,
                    "prompt_tokens": -1, "response_tokens": -1}  # fmt: skip
        for col in COLUMNS:
            if col in data:
                continue
            if col in columns:
                data[col] = columns[col]
            elif col in defaults:
                data[col] = np.full(n, defaults[col])
            else:
                data[col] = _strings(pa.nulls(n, pa.string()).fill_null(""))
        return pd.DataFrame(data)


def _strings(array: pa.Array) -> pd.api.extensions.ExtensionArray:
    return pd.array(array, dtype="str")


def _ids(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
    return _strings(pa.array(values).cast(pa.string()))


def _rollouts(out: SimOutcome, params: SimParams, blocks: _Blocks) -> pd.DataFrame:
    n = len(out.sample_t1)
    group = np.arange(n) // params.group_size
    in_flight = np.isnan(out.sample_t1)
    status = np.where(in_flight, ABORTED, out.group_status[group]).astype(np.int8)
    v_train = out.group_v_train[group]
    extra: dict[str, object] = {}
    if out.sample_response_tokens is not None:
        extra["response_tokens"] = out.sample_response_tokens
        extra["prompt_tokens"] = np.full(n, out.prompt_tokens or -1)
    if out.sample_attrs:
        attrs = np.full(n, "", dtype=object)
        attrs[list(out.sample_attrs)] = list(out.sample_attrs.values())
        extra["attrs"] = _strings(pa.array(attrs, pa.string()))
    return blocks.frame(
        n, K.ROLLOUT, "span",
        actor=out.sample_slot + 3,  # slot i is actor "slot/i", after "trainer", "generator" and "sandboxes"
        status=status,
        step=np.where(status == OK, np.where(v_train >= 0, v_train + 1, -1), out.group_step[group]),
        t0=out.group_t0[group],
        t1=np.where(in_flight, out.end_time, out.sample_t1),
        value=out.sample_reward,
        sample=_ids(np.arange(n)),
        group=_ids(group),
        v_start=out.group_v_start[group],
        v_end=np.where(in_flight, -1, out.sample_v_end),
        v_train=v_train,
        **extra,
    )  # fmt: skip


def _sandboxes(out: SimOutcome, blocks: _Blocks) -> list[pd.DataFrame]:
    """sandbox.queue and sandbox.start spans of every start attempt, tied to their sample."""
    rows = out.sandbox_rows
    if rows is None:
        return []
    frames = []
    for row_kind, key in ((SANDBOX_QUEUE_ROW, K.SANDBOX_QUEUE), (SANDBOX_START_ROW, K.SANDBOX_START)):
        part = rows[rows[:, 0] == row_kind]
        frames.append(blocks.frame(
            len(part), key, "span", actor="sandboxes", status=_SANDBOX_STATUS_CODES[part[:, 4].astype(int)],
            t0=part[:, 2], t1=part[:, 3], sample=_ids(part[:, 1].astype(np.int64)),
        ))  # fmt: skip
    return frames


def _buffered(out: SimOutcome, blocks: _Blocks) -> list[pd.DataFrame]:
    if out.step_aborted is None:
        return []
    n = len(out.step_aborted)
    return [blocks.frame(n, K.SAMPLES_PARTIAL_BUFFERED, "agg", actor="generator", step=np.arange(1, n + 1),
                         value=out.step_aborted.astype(float))]  # fmt: skip


def _groups(out: SimOutcome, blocks: _Blocks) -> pd.DataFrame:
    done = np.flatnonzero(~np.isnan(out.group_done_t))
    return blocks.frame(
        len(done), K.ROLLOUT_GROUP, "point", actor="generator", status=out.group_status[done],
        step=out.group_step[done], t0=out.group_done_t[done], value=out.group_reward_std[done], group=_ids(done),
        v_start=out.group_v_start[done], v_train=out.group_v_train[done],
    )  # fmt: skip


def _trainer(out: SimOutcome, blocks: _Blocks) -> list[pd.DataFrame]:
    n = len(out.step_end)
    steps = np.arange(1, n + 1)
    phases = [
        (K.TRAINER_WAIT, out.step_start, out.step_batch_ready),
        (K.TRAINER_COMPUTE, out.step_batch_ready, out.step_compute_end),
        (K.TRAINER_WEIGHT_SYNC, out.step_compute_end, out.step_end),
        (K.TRAINER_STEP, out.step_start, out.step_end),
    ]
    return [blocks.frame(n, key, "span", actor="trainer", step=steps, t0=t0, t1=t1) for key, t0, t1 in phases]


def _paused(out: SimOutcome, blocks: _Blocks) -> pd.DataFrame:
    spans = np.asarray(out.paused, dtype=float).reshape(-1, 2)
    return blocks.frame(len(spans), K.GENERATOR_PAUSED, "span", actor="generator", t0=spans[:, 0], t1=spans[:, 1])


def outcome_to_trace(out: SimOutcome, params: SimParams) -> Trace:
    cfg = params.config
    blocks = _Blocks(cfg.concurrency)
    frames = [*_trainer(out, blocks), _paused(out, blocks), _groups(out, blocks), _rollouts(out, params, blocks),
              *_sandboxes(out, blocks), *_buffered(out, blocks)]  # fmt: skip
    meta = TraceMeta(
        adapter="sim",
        framework="benchbed-sim",
        framework_version=benchbed.__version__,
        mode=cfg.mode if cfg.mode != "async" else f"async/{cfg.staleness_policy}",
        concurrency=cfg.concurrency,
        samples_per_step=params.samples_per_step,
        group_size=params.group_size,
        extra={
            "end_time_s": out.end_time,
            "seed": cfg.seed,
            **({"max_response_tokens": params.max_response_tokens} if cfg.tokens is not None else {}),
            **({"resources": params.resources} if params.resources else {}),
        },  # fmt: skip
    )
    return Trace(pd.concat(frames, ignore_index=True), meta)
