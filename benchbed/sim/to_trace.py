"""Turn a SimOutcome into the canonical trace, column-wise (no per-row Python work).

Every block of events (trainer phases, pauses, groups, rollouts, sandbox starts, the partial-rollout buffer) gives
its columns as arrays; each trace column is then one concatenation, categorical columns as codes into one
category list, string ids as one Arrow cast (sample ids) or take (group ids), so a million-sample trace is built
without per-row conversions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import benchbed
from benchbed import keys as K
from benchbed.columns import POOL, arange, pooled
from benchbed.sim.engine import ABORTED, OK, STATUS_NAMES, SimOutcome, SimParams
from benchbed.sim.sandbox_starts import SANDBOX_QUEUE_ROW, SANDBOX_START_ROW, SANDBOX_STATUSES
from benchbed.trace import COLUMNS, Trace, TraceMeta

_KEYS = [K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_STEP, K.GENERATOR_PAUSED,
         K.ROLLOUT_GROUP, K.ROLLOUT, K.SANDBOX_QUEUE, K.SANDBOX_START, K.SAMPLES_PARTIAL_BUFFERED,
         K.SAMPLES_DECODED_TOKENS, K.SAMPLES_OFF_POLICY_TOKENS]  # fmt: skip
_KINDS = ["span", "point", "agg"]
_STATUSES = ["", *STATUS_NAMES, *SANDBOX_STATUSES[1:]]
_SANDBOX_STATUS_CODES = np.array([STATUS_NAMES.index("ok"), *range(len(STATUS_NAMES), len(_STATUSES) - 1)])
_DEFAULTS = {"step": -1, "t0": np.nan, "t1": np.nan, "value": np.nan, "v_start": -1, "v_end": -1, "v_train": -1,
             "prompt_tokens": -1, "response_tokens": -1, "sample": -1, "group": -1}  # fmt: skip


@dataclass(frozen=True)
class _PerGroup:
    """A group column standing for its values repeated once per sample of each group: written straight into the
    trace column, with no million-row array in between."""

    values: np.ndarray
    group_size: int


@dataclass(frozen=True)
class _EverySample:
    """A block's sample column when the block has one row per sample, in order: sample ids 0 .. n-1."""


@dataclass
class _Blocks:
    """Event blocks in trace order; each gives some columns as arrays (or one value), the rest take defaults."""

    actors: list[str]
    blocks: list[tuple[int, dict[str, object]]] = field(default_factory=list)

    def add(self, n: int, key: str, kind: str, actor: str | np.ndarray, status: np.ndarray | None = None,
            **columns: object) -> None:  # fmt: skip
        """A block of n events; `actor` is a name or an array of codes into self.actors, `status` codes of
        _STATUSES less one (absent: no status)."""
        columns["key"] = _KEYS.index(key)
        columns["kind"] = _KINDS.index(kind)
        columns["actor"] = self.actors.index(actor) if isinstance(actor, str) else actor
        columns["status"] = 0 if status is None else status + 1
        self.blocks.append((n, columns))

    def column(self, name: str, dtype: type, default: object) -> np.ndarray:
        """One column over every block: the blocks' arrays, a block's single value repeated, or the default, each
        written (and cast) into its rows of the one output array."""
        column = pooled(sum(n for n, _ in self.blocks), dtype)
        start = 0
        for n, cols in self.blocks:
            part = cols.get(name, default)
            if isinstance(part, _PerGroup):
                column[start : start + n].reshape(-1, part.group_size)[:] = part.values[:, None]
            else:
                column[start : start + n] = part
            start += n
        return column

    def sample_ids(self, names: pa.LargeStringArray | None) -> pd.api.extensions.ExtensionArray:
        """The sample column: a block of every sample takes the first of `names` (the strings of ids 0, 1, ...; cast
        here where absent or short), other blocks' ids are cast, and rows of no sample are ""."""
        pieces = []
        for n, cols in self.blocks:
            part = cols.get("sample", -1)
            if isinstance(part, _EverySample):
                pieces += _first_ids(names, n)
            elif isinstance(part, np.ndarray):
                pieces.append(pc.cast(_masked(part), pa.large_string(), memory_pool=POOL))
            else:
                pieces.append(_empty_strings(n))
        return _without_nulls(pa.concat_arrays(pieces, memory_pool=POOL) if pieces else _empty_strings(0))

    def frame(self, sample_names: pa.LargeStringArray | None) -> pd.DataFrame:
        data: dict[str, object] = {}
        categories = {"key": _KEYS, "kind": _KINDS, "actor": self.actors, "status": _STATUSES}
        for col in COLUMNS:
            if col in categories:
                codes = self.column(col, _codes_dtype(len(categories[col])), 0)  # pandas' own width: no copy
                data[col] = pd.Categorical.from_codes(codes, categories[col], validate=False)  # codes built here
            elif col == "sample":
                data[col] = self.sample_ids(sample_names)
            elif col == "group":
                data[col] = _shared_ids(self.column(col, np.int64, -1))
            elif col == "attrs":
                data[col] = self._attrs()
            else:
                data[col] = self.column(col, np.float64 if col in ("t0", "t1", "value") else np.int64, _DEFAULTS[col])
        return pd.DataFrame(data, copy=False)  # one block per column: no copy into 2-D blocks

    def _attrs(self) -> pd.api.extensions.ExtensionArray:
        parts = [cols.get("attrs") for _, cols in self.blocks]
        if all(part is None for part in parts):  # every attrs ""
            return pd.array(_empty_strings(sum(n for n, _ in self.blocks)), dtype="str")
        arrays = [pa.array(p, pa.large_string()) if p is not None else _empty_strings(n)
                  for p, (n, _) in zip(parts, self.blocks, strict=True)]  # fmt: skip
        return pd.array(pa.concat_arrays(arrays), dtype="str")


def _codes_dtype(categories: int) -> type:
    """The integer width pandas keeps a categorical's codes in, for this many categories."""
    return np.int8 if categories < 127 else np.int16 if categories < 32767 else np.int32


def range_ids(first: int, stop: int) -> pa.LargeStringArray:
    """The strings of ids first .. stop-1, in one Arrow cast (which releases the GIL: simulate_spec runs it beside
    the event loop)."""
    return pc.cast(pa.array(arange(first, stop)), pa.large_string(), memory_pool=POOL)


def _first_ids(names: pa.LargeStringArray | None, n: int) -> list[pa.LargeStringArray]:
    """The strings of ids 0 .. n-1, in pieces: the first of `names`, the rest cast here."""
    if names is None:
        return [range_ids(0, n)]
    known = min(n, len(names))
    return [names.slice(0, known)] + ([range_ids(known, n)] if known < n else [])


def _empty_strings(n: int) -> pa.LargeStringArray:
    """n empty strings: zero offsets (pages the kernel maps lazily), no data."""
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(np.zeros(n + 1, np.int64)), pa.py_buffer(b""))


def _shared_ids(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Ids that many rows share (a group's, on each of its samples) as strings, "" where -1: each id cast once, and
    the column a take of those strings, a third of the time of casting every row."""
    names = range_ids(0, values.max(initial=-1) + 1)
    return _without_nulls(pc.take(names, _masked(values), memory_pool=POOL))


def _masked(values: np.ndarray) -> pa.Array:
    """The ids as an Arrow array, null where -1."""
    return pa.array(values, mask=values < 0, memory_pool=POOL)


def _without_nulls(strings: pa.LargeStringArray) -> pd.api.extensions.ExtensionArray:
    """The strings as pandas' str column, the null slots as "": Arrow's cast and take leave a null slot empty, so
    dropping the validity bitmap leaves "" there with no second copy (the golden traces pin this)."""
    _, offsets, data = strings.buffers()
    return pd.array(pa.LargeStringArray.from_buffers(len(strings), offsets, data), dtype="str")


def _rollouts(out: SimOutcome, params: SimParams, blocks: _Blocks) -> None:
    n, G = len(out.sample_t1), params.group_size  # the samples of group g are g*G .. g*G + G-1

    status = np.repeat(out.group_status, G)
    status[out.sample_v_end < 0] = ABORTED  # still running when the run ended
    trained_step = np.where(out.group_v_train >= 0, out.group_v_train + 1, -1)
    extra: dict[str, object] = {}
    if out.sample_response_tokens is not None:
        extra["response_tokens"] = out.sample_response_tokens
        extra["prompt_tokens"] = out.prompt_tokens or -1
    if out.sample_attrs:
        attrs = np.full(n, "", dtype=object)
        attrs[list(out.sample_attrs)] = list(out.sample_attrs.values())
        extra["attrs"] = attrs
    blocks.add(
        n, K.ROLLOUT, "span",
        actor=out.sample_slot + 3,  # slot i is actor "slot/i", after "trainer", "generator" and "sandboxes"
        status=status,
        step=_PerGroup(np.where(out.group_status == OK, trained_step, out.group_step), G),
        t0=_PerGroup(out.group_t0, G),
        t1=out.sample_t1,
        value=out.sample_reward,
        sample=_EverySample(),
        group=_PerGroup(np.arange(n // G), G),
        v_start=_PerGroup(out.group_v_start, G),
        v_end=out.sample_v_end,
        v_train=_PerGroup(out.group_v_train, G),
        **extra,
    )  # fmt: skip


def _sandboxes(out: SimOutcome, blocks: _Blocks) -> None:
    """sandbox.queue and sandbox.start spans of every start attempt, tied to their sample."""
    rows = out.sandbox_rows
    if rows is None:
        return
    for row_kind, key in ((SANDBOX_QUEUE_ROW, K.SANDBOX_QUEUE), (SANDBOX_START_ROW, K.SANDBOX_START)):
        part = rows[rows[:, 0] == row_kind]
        blocks.add(len(part), key, "span", actor="sandboxes", status=_SANDBOX_STATUS_CODES[part[:, 4].astype(int)],
                   t0=part[:, 2], t1=part[:, 3], sample=part[:, 1].astype(np.int64))  # fmt: skip


def _buffered(out: SimOutcome, blocks: _Blocks) -> None:
    if out.step_aborted is None:
        return
    n = len(out.step_aborted)
    blocks.add(n, K.SAMPLES_PARTIAL_BUFFERED, "agg", actor="generator", step=np.arange(1, n + 1),
               value=out.step_aborted.astype(float))  # fmt: skip
    for key, tokens in ((K.SAMPLES_DECODED_TOKENS, out.step_decoded_tokens),
                        (K.SAMPLES_OFF_POLICY_TOKENS, out.step_off_policy_tokens)):  # fmt: skip
        if tokens is not None:
            blocks.add(n, key, "agg", actor="generator", step=np.arange(1, n + 1), value=tokens)


def _groups(out: SimOutcome, blocks: _Blocks) -> None:
    done = np.flatnonzero(~np.isnan(out.group_done_t))
    blocks.add(
        len(done), K.ROLLOUT_GROUP, "point", actor="generator", status=out.group_status[done],
        step=out.group_step[done], t0=out.group_done_t[done], value=out.group_reward_std[done], group=done,
        v_start=out.group_v_start[done], v_train=out.group_v_train[done],
    )  # fmt: skip


def _trainer(out: SimOutcome, blocks: _Blocks) -> None:
    n = len(out.step_end)
    steps = np.arange(1, n + 1)
    phases = [
        (K.TRAINER_WAIT, out.step_start, out.step_batch_ready),
        (K.TRAINER_COMPUTE, out.step_batch_ready, out.step_compute_end),
        (K.TRAINER_WEIGHT_SYNC, out.step_compute_end, out.step_end),
        (K.TRAINER_STEP, out.step_start, out.step_end),
    ]
    for key, t0, t1 in phases:
        blocks.add(n, key, "span", actor="trainer", step=steps, t0=t0, t1=t1)


def _paused(out: SimOutcome, blocks: _Blocks) -> None:
    spans = np.asarray(out.paused, dtype=float).reshape(-1, 2)
    blocks.add(len(spans), K.GENERATOR_PAUSED, "span", actor="generator", t0=spans[:, 0], t1=spans[:, 1])


def outcome_to_trace(out: SimOutcome, params: SimParams, sample_names: pa.LargeStringArray | None = None) -> Trace:
    """The run's trace; `sample_names`, the strings of sample ids 0, 1, ... (range_ids) where already cast."""
    cfg = params.config
    blocks = _Blocks(["trainer", "generator", "sandboxes", *(f"slot/{i}" for i in range(cfg.concurrency))])
    _trainer(out, blocks)
    _paused(out, blocks)
    _groups(out, blocks)
    _rollouts(out, params, blocks)
    _sandboxes(out, blocks)
    _buffered(out, blocks)
    meta = TraceMeta(
        adapter="sim",
        framework="benchbed-sim",
        framework_version=benchbed.__version__,
        mode=cfg.mode if cfg.mode != "async" else f"async/{cfg.staleness_policy}",
        concurrency=cfg.concurrency,
        samples_per_step=params.samples_per_step,
        group_size=params.group_size,
        modelled=[K.GENERATOR_PAUSED],  # admission is simulated: no pause span means admission never held back
        extra={
            "end_time_s": out.end_time,
            "seed": cfg.seed,
            **({"max_response_tokens": params.max_response_tokens} if cfg.tokens is not None else {}),
            **({"resources": params.resources} if params.resources else {}),
        },  # fmt: skip
    )
    return Trace(blocks.frame(sample_names), meta)
