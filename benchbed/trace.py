"""The canonical trace (docs/reference/trace.md): one row per event in a DataFrame, plus run
metadata; parquet on disk."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from benchbed.columns import POOL
from benchbed.errors import TraceError
from benchbed.keys import KEYS, KINDS, ROLLOUT, ROLLOUT_GROUP, ROLLOUT_STATUSES, SCHEMA_VERSION, is_known_key
from benchbed.outputs import open_output

TRACE_FILENAME = "trace.parquet"
_META_KEY = b"benchbed.trace_meta"

STRING_COLUMNS: tuple[str, ...] = ("key", "kind", "actor", "sample", "group", "status", "attrs")
FLOAT_COLUMNS: tuple[str, ...] = ("t0", "t1", "value")
# prompt_tokens / response_tokens (-1 = unknown) are on rollout rows, for cost per trained token.
INT_COLUMNS: tuple[str, ...] = ("step", "v_start", "v_end", "v_train", "prompt_tokens", "response_tokens")
COLUMNS: tuple[str, ...] = (
    "key", "kind", "step", "t0", "t1", "value", "actor", "sample", "group",
    "v_start", "v_end", "v_train", "status", "attrs", "prompt_tokens", "response_tokens",
)  # fmt: skip
_CATEGORICAL = ("key", "kind", "actor", "status")
# Parquet encodings, chosen column by column on a million-sample simulated trace (write time and bytes measured
# against zstd everywhere): dictionaries where values repeat (categories, rewards), read straight from pandas'
# categoricals; integers in long runs of one value (steps, the versions a group starts and trains with, the run's
# prompt length) plain and lz4, a third faster than delta encoding at the same size; integers that change from row
# to row (end versions, response lengths) delta-encoded and left uncompressed (lz4 doubles their size); start and
# end times (distinct doubles) lz4, end times split by byte first (a quarter smaller); zstd only for strings (ids,
# attrs), where it saves most; statistics for numbers only (min/max of a million distinct id strings cost a third of
# the write). Against zstd on every column but the end times: 246 ms instead of 268 ms and 10.8 MB instead of
# 11.9 MB (median of 9 writes); the lz4 integers took 12 ms more off that, at the same size.
_DICTIONARY_COLUMNS = [*_CATEGORICAL, "value"]
_LZ4_COLUMNS = ("t0", "t1", "step", "v_start", "v_train", "prompt_tokens")
_COLUMN_ENCODING = {
    **{column: "DELTA_BINARY_PACKED" for column in INT_COLUMNS if column not in _LZ4_COLUMNS},
    "t1": "BYTE_STREAM_SPLIT",
}
_STATS_COLUMNS = [*FLOAT_COLUMNS, *INT_COLUMNS]
_WRITE_BATCH_ROWS = 1 << 16  # rows each encoder takes at a time (pyarrow's 1,024: 5 ms more a million rows, same bytes)
_COMPRESSION = {
    column: "zstd" if column in STRING_COLUMNS and column not in _CATEGORICAL else "lz4" if column in _LZ4_COLUMNS
    else "none"
    for column in COLUMNS
}  # fmt: skip
_NON_NEGATIVE_AGG = frozenset(k for k in KEYS if k.startswith(("trainer.", "samples.", "groups.")))
_SPAN, _AGG = frozenset({"span"}), frozenset({"agg"})
_ROLLOUT_KEYS, _ROLLOUT_STATUSES = frozenset({ROLLOUT, ROLLOUT_GROUP}), frozenset(ROLLOUT_STATUSES)
_DEFAULTS: dict[str, Any] = {
    "step": -1, "t0": math.nan, "t1": math.nan, "value": math.nan, "actor": "", "sample": "",
    "group": "", "v_start": -1, "v_end": -1, "v_train": -1, "status": "", "attrs": "", "prompt_tokens": -1,
    "response_tokens": -1,
}  # fmt: skip


class TraceMeta(BaseModel):
    """What a trace knows about its run beyond the events: origin, mode and the generator's shape."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    adapter: str
    framework: str = ""
    framework_version: str = ""
    mode: str = ""
    concurrency: int | None = Field(default=None, description="generator sample slots, if known")
    samples_per_step: int | None = None
    group_size: int | None = None
    sources: list[str] = Field(default_factory=list, description="files the trace was read from")
    warnings: list[str] = Field(default_factory=list)
    partial: bool = False
    modelled: list[str] = Field(
        default_factory=list,
        description="event keys the producer emits whenever the mechanism acts: none of them in the trace means it "
        "never acted (a metric of 0), not that it went unmeasured (an absent metric)",
    )
    extra: dict[str, Any] = Field(default_factory=dict)


@dataclass
class Trace:
    """Events DataFrame with the columns of docs/reference/trace.md, and the run's metadata."""

    events: pd.DataFrame
    meta: TraceMeta

    def __post_init__(self) -> None:
        self.events = normalize_events(self.events)

    def of(self, key: str) -> pd.DataFrame:
        """Rows with this key."""
        return self.events[self.events["key"] == key]

    def validate(self) -> Trace:
        validate_events(self.events)
        return self

    def write(self, path: str | Path) -> Path:
        """Write as parquet (atomically: temp file, then rename); returns the path written."""
        path = Path(path)
        if path.is_dir():
            path = path / TRACE_FILENAME
        table = pa.Table.from_pandas(self.events, preserve_index=False)
        metadata = dict(table.schema.metadata or {})
        metadata[_META_KEY] = self.meta.model_dump_json().encode()
        # A column with no null (all but the float columns, whose NaN is a null, in a trace built by benchbed) is
        # written required: no definition levels to encode, a sixth of a million-sample write. The cast copies nothing.
        fields = [field.with_nullable(field.name in FLOAT_COLUMNS or table[field.name].null_count > 0)
                  for field in table.schema]  # fmt: skip
        table = table.cast(pa.schema(fields, metadata=metadata))
        with open_output(path) as fh:
            pq.write_table(
                table,
                fh,
                compression=_COMPRESSION,
                use_dictionary=_DICTIONARY_COLUMNS,
                column_encoding=_COLUMN_ENCODING,
                write_statistics=_STATS_COLUMNS,
                write_batch_size=_WRITE_BATCH_ROWS,
                memory_pool=POOL,  # no huge pages for the encoders' buffers (benchbed/columns.py)
            )
        return path


def normalize_events(df: pd.DataFrame) -> pd.DataFrame:
    """Fill absent optional columns with defaults and give every column its schema dtype."""
    if "key" not in df.columns or "kind" not in df.columns:
        missing = [c for c in ("key", "kind") if c not in df.columns]
        raise TraceError(f"trace is missing required column(s) {missing}; expected columns {list(COLUMNS)}")
    if _in_schema(df):
        return df.copy(deep=False)  # already normal (a simulated trace): no second copy of a million rows
    out = {}
    n = len(df)
    for col in COLUMNS:
        if col in df.columns:
            series = df[col]
        else:
            series = pd.Series(np.full(n, _DEFAULTS[col], dtype=object) if n else [], dtype=object)
        out[col] = _coerce(col, series.reset_index(drop=True))
    return pd.DataFrame(out)


def _in_schema(df: pd.DataFrame) -> bool:
    """Columns exactly COLUMNS, a default index, and every column already of the dtype _coerce would give it."""
    if tuple(df.columns) != COLUMNS or not isinstance(df.index, pd.RangeIndex) or df.index.start != 0:
        return False
    for col, dtype in zip(COLUMNS, df.dtypes, strict=True):  # the dtypes at once: a column each costs more
        if col in _CATEGORICAL:
            ok = isinstance(dtype, pd.CategoricalDtype)
        elif col in FLOAT_COLUMNS:
            ok = dtype == np.float64
        elif col in INT_COLUMNS:
            ok = dtype == np.int64
        else:
            ok = isinstance(dtype, pd.StringDtype) and not df[col].hasnans  # pandas strings; object columns refused
        if not ok:
            return False
    return True


def _coerce(col: str, series: pd.Series) -> pd.Series:
    try:
        if col in _CATEGORICAL and isinstance(series.dtype, pd.CategoricalDtype):
            return series
        if col in FLOAT_COLUMNS:
            return series.astype("float64")
        if col in INT_COLUMNS:
            if series.dtype.kind == "f" and series.isna().any():
                series = series.fillna(-1)
            return series.astype("int64")
        if col in _CATEGORICAL:
            return series.astype(str).astype("category")
        if pd.api.types.is_string_dtype(series.dtype) and not series.hasnans:
            return series
        return series.fillna("").astype(str)
    except (ValueError, TypeError) as exc:
        bad = _first_bad_row(col, series)
        raise TraceError(
            f"column {col!r}, row {bad}: value {series.iloc[bad]!r} is not of the expected type "
            f"({'float' if col in FLOAT_COLUMNS else 'int' if col in INT_COLUMNS else 'str'}): {exc}"
        ) from exc


def _first_bad_row(col: str, series: pd.Series) -> int:
    cast = float if col in FLOAT_COLUMNS else int
    for i, value in enumerate(series):
        try:
            if cast is int and isinstance(value, float) and not value.is_integer():
                return i
            cast(value)
        except (ValueError, TypeError):
            return i
    return 0


class ImpossibleValueError(TraceError):
    """A duration or count that is negative or infinite: the canonical key and the steps it was found at, so that
    a reader can name the native key and the input it came from."""

    def __init__(self, message: str, key: str, steps: list[int]) -> None:
        super().__init__(message)
        self.key, self.steps = key, steps


def validate_events(df: pd.DataFrame) -> None:
    """Raise TraceError naming the first offending row and column."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise TraceError(f"trace is missing column(s) {missing}; expected columns {list(COLUMNS)}")
    bad_key = _outside(df["key"], is_known_key)
    if bad_key is not None:
        raise TraceError(f"row {bad_key}, column 'key': unknown event key {df['key'].iloc[bad_key]!r} "
                         "(see benchbed/keys.py)")  # fmt: skip
    bad_kind = _outside(df["kind"], KINDS.__contains__)
    if bad_kind is not None:
        raise TraceError(f"row {bad_kind}, column 'kind': {df['kind'].iloc[bad_kind]!r} is not one of {list(KINDS)}")
    t0 = df["t0"].to_numpy(dtype=float)
    t1 = df["t1"].to_numpy(dtype=float)
    is_span = member(df["kind"], _SPAN)
    no_time = is_span & (np.isnan(t0) | np.isnan(t1))
    if no_time.any():
        row = int(np.flatnonzero(no_time)[0])
        col = "t0" if np.isnan(t0[row]) else "t1"
        raise TraceError(f"row {row}, column {col!r}: a span needs finite t0 and t1")
    with np.errstate(invalid="ignore"):
        backwards = is_span & (t1 < t0)
    if backwards.any():
        row = int(np.flatnonzero(backwards)[0])
        raise TraceError(f"row {row}, column 't1': t1={t1[row]} is before t0={t0[row]}")
    is_rollout = member(df["key"], _ROLLOUT_KEYS)
    bad_status = is_rollout & ~member(df["status"], _ROLLOUT_STATUSES)
    if bad_status.any():
        row = int(np.flatnonzero(bad_status)[0])
        raise TraceError(
            f"row {row}, column 'status': {str(df['status'].iloc[row])!r} is not a rollout status "
            f"(one of {list(ROLLOUT_STATUSES)})"
        )
    # Durations and counts in agg rows (trainer.*, samples.*, groups.*) cannot be negative or infinite.
    value = df["value"].to_numpy(dtype=float)
    counted = member(df["kind"], _AGG) & member(df["key"], _NON_NEGATIVE_AGG)
    with np.errstate(invalid="ignore"):
        impossible = counted & ((value < 0) | np.isinf(value))
    if impossible.any():
        rows = np.flatnonzero(impossible)
        row = int(rows[0])
        steps = sorted({int(s) for s in df["step"].to_numpy()[rows]})
        raise ImpossibleValueError(
            f"row {row}, column 'value': {df['key'].iloc[row]} = {value[row]} at step(s) "
            f"{', '.join(map(str, steps[:10]))}: a duration or count cannot be negative or infinite",
            key=str(df["key"].iloc[row]),
            steps=steps,
        )


def member(column: pd.Series, allowed: frozenset[str]) -> np.ndarray:
    """Whether each row's value is one of `allowed` (missing values are not), judged once per category where the
    column is categorical: pandas' isin and == cost far more than the check on a trace of a few rows."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        values: pd.Categorical = column.array
        hit = np.fromiter((c in allowed for c in values.categories), dtype=bool, count=len(values.categories))
        return np.append(hit, False)[values.codes]  # code -1 (missing) takes the appended False
    return column.isin(list(allowed)).to_numpy(dtype=bool)


def _outside(column: pd.Series, allowed: Any) -> int | None:
    """First row whose value `allowed` refuses, judged once per distinct value (categories when categorical)."""
    values = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.astype(str).unique()
    refused = [v for v in values if not allowed(str(v))]
    if not refused:
        return None
    return int(np.flatnonzero(column.astype(str).isin([str(v) for v in refused]).to_numpy())[0])


class TraceBuilder:
    """Accumulates events in blocks of columns (fast for millions of rows) and builds a Trace.

    Single rows (`add`, `span`, ...) gather in lists; `extend_columns` appends a block whose columns may be
    sequences, numpy arrays or one scalar shared by every row, so bulk rows never pass through Python objects."""

    def __init__(self) -> None:
        self._blocks: list[tuple[int, dict[str, Any]]] = []
        self._rows: dict[str, list[Any]] = {c: [] for c in COLUMNS}

    def add(self, key: str, kind: str, **fields: Any) -> None:
        fields["key"] = key
        fields["kind"] = kind
        for col in COLUMNS:
            self._rows[col].append(fields.get(col, _DEFAULTS.get(col)))

    def span(self, key: str, t0: float, t1: float, **fields: Any) -> None:
        self.add(key, "span", t0=t0, t1=t1, **fields)

    def point(self, key: str, t0: float, **fields: Any) -> None:
        self.add(key, "point", t0=t0, **fields)

    def agg(self, key: str, step: int, value: float, **fields: Any) -> None:
        self.add(key, "agg", step=step, value=value, **fields)

    def extend_columns(self, n: int, values: Mapping[str, Any]) -> None:
        """Append n rows at once: each column from a sequence or array of length n, a scalar shared by all, or its
        default."""
        unknown = set(values) - set(COLUMNS)
        if unknown:
            raise TraceError(f"unknown trace column(s) {sorted(unknown)}; expected {list(COLUMNS)}")
        block = {}
        for col in COLUMNS:
            given = values.get(col, _DEFAULTS.get(col))
            if isinstance(given, (list, tuple, np.ndarray)) and len(given) != n:
                raise TraceError(f"column {col!r}: {len(given)} values for {n} rows")
            block[col] = given
        if n:
            self._seal()
            self._blocks.append((n, block))

    def extend_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Append rows given as tuples in COLUMNS order."""
        if rows:
            self.extend_columns(len(rows), dict(zip(COLUMNS, map(list, zip(*rows, strict=True)), strict=True)))

    def column(self, col: str) -> list[Any]:
        """Every value of one column so far, in row order, as a list."""
        self._seal()
        out: list[Any] = []
        for n, block in self._blocks:
            given = block[col]
            out.extend(given.tolist() if isinstance(given, np.ndarray) else given if _is_seq(given) else [given] * n)
        return out

    def __len__(self) -> int:
        return sum(n for n, _ in self._blocks) + len(self._rows["key"])

    def build(self, meta: TraceMeta) -> Trace:
        """The Trace; blocks go to typed arrays first (repeated strings as categoricals), which is what makes
        building 10^5-10^6 rows cheap. A column that does not fit its type is left to normalize_events' errors."""
        self._seal()
        columns = {col: _typed(col, [(n, b[col]) for n, b in self._blocks]) for col in COLUMNS}
        return Trace(pd.DataFrame(columns, copy=False), meta)  # the columns as they are: no copy into 2-D blocks

    def _seal(self) -> None:
        """Close the single rows gathered so far into a block, so that blocks keep the order rows came in."""
        n = len(self._rows["key"])
        if n:
            self._blocks.append((n, self._rows))
            self._rows = {c: [] for c in COLUMNS}


def _is_seq(value: Any) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def _flat(parts: list[tuple[int, Any]]) -> list[Any]:
    out: list[Any] = []
    for n, given in parts:
        out.extend(given.tolist() if isinstance(given, np.ndarray) else given if _is_seq(given) else [given] * n)
    return out


def _typed(col: str, parts: list[tuple[int, Any]]) -> Any:
    """One column from its blocks: a typed array, or the plain list when a value does not fit the column's type."""
    try:
        if col in FLOAT_COLUMNS or col in INT_COLUMNS:
            dtype = np.float64 if col in FLOAT_COLUMNS else np.int64
            out, at = np.empty(sum(n for n, _ in parts), dtype=dtype), 0  # filled block by block: no second copy
            for n, g in parts:
                if _is_seq(g):
                    out[at : at + n] = np.asarray(g, dtype=dtype)
                else:  # a scalar shared by the block, cast as np.full casts it (no array of its own)
                    np.copyto(out[at : at + n], g, casting="unsafe")
                at += n
            return out
        if col in _CATEGORICAL:
            categories = sorted({v for _, g in parts for v in (g if _is_seq(g) else (g,))})
            if all(v.__class__ is str for v in categories):  # factorised here: 3x faster than pd.Categorical(list)
                index = {c: i for i, c in enumerate(categories)}
                codes, at = np.empty(sum(n for n, _ in parts), dtype=np.int32), 0  # filled block by block
                for n, g in parts:
                    codes[at : at + n] = np.fromiter(map(index.__getitem__, g), np.int32, n) if _is_seq(g) else index[g]
                    at += n
                return pd.Categorical.from_codes(codes, dtype=_categories(tuple(categories)))
        if col in STRING_COLUMNS and _ARROW_STR is not None:  # pandas' own str dtype, built by arrow in one call
            return pd.array(pa.array(_flat(parts), type=pa.large_string()), dtype=_ARROW_STR)
    except (ValueError, TypeError, OverflowError, KeyError, pa.ArrowException):
        pass
    return _flat(parts)


@functools.lru_cache(maxsize=1024)
def _categories(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The dtype of these categories, made once: pandas checks the categories each time a dtype is made, the most
    of building a trace of a few rows (what each update of `benchbed watch` builds)."""
    return pd.CategoricalDtype(list(categories))


def _arrow_str_dtype() -> pd.StringDtype | None:
    """The dtype pandas gives a list of str when it is arrow-backed (pandas 3), else None (object columns)."""
    dtype = pd.Series(["x"]).dtype
    return dtype if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow" else None


_ARROW_STR = _arrow_str_dtype()


def attrs_json(attrs: Mapping[str, Any]) -> str:
    """Compact JSON for the attrs column (non-finite floats become null)."""
    return json.dumps(
        {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in attrs.items()},
        separators=(",", ":"),
    )


def read_trace(path: str | Path) -> Trace:
    """Read a trace.parquet (or the one inside a run directory), with a clear error if it is unreadable."""
    path = Path(path)
    if path.is_dir():
        path = path / TRACE_FILENAME
    if not path.exists():
        raise TraceError(f"{path}: no trace file here; expected a {TRACE_FILENAME} written by benchbed")
    try:
        table = pq.read_table(path)
    except PermissionError as exc:
        raise TraceError(f"{path}: cannot read the trace ({exc.strerror or 'permission denied'})") from None
    except (pa.ArrowInvalid, OSError) as exc:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise TraceError(
            f"{path}: not a readable parquet trace ({first}); the file is corrupt or truncated, "
            "re-run or re-ingest the run"
        ) from None
    raw_meta = (table.schema.metadata or {}).get(_META_KEY)
    if raw_meta is None:
        raise TraceError(f"{path}: parquet file has no benchbed trace metadata; was it written by benchbed?")
    meta = TraceMeta.model_validate_json(raw_meta)
    if meta.schema_version > SCHEMA_VERSION:
        raise TraceError(
            f"{path}: trace schema version {meta.schema_version} is newer than this benchbed understands "
            f"({SCHEMA_VERSION}); upgrade benchbed"
        )
    try:
        events = table.to_pandas()
    except (pa.ArrowInvalid, ValueError) as exc:
        raise TraceError(f"{path}: trace columns cannot be read ({exc})") from exc
    trace = Trace(events, meta)
    try:
        trace.validate()
    except TraceError as exc:
        raise TraceError(f"{path}: {exc}") from exc
    return trace
