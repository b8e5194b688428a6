"""The canonical trace: schema, parquet round trip, validation messages naming row and column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from benchbed.errors import TraceError
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec
from benchbed.trace import COLUMNS, Trace, TraceBuilder, TraceMeta, read_trace


def small_trace() -> Trace:
    b = TraceBuilder()
    b.span("trainer.step", 0.0, 10.0, step=1, actor="trainer")
    b.span("rollout", 1.0, 4.0, step=1, sample="s0", group="g0", v_start=0, v_end=0, v_train=0, status="ok", value=1)
    b.agg("framework.trainer_idle_ratio", 1, 0.25)
    return b.build(TraceMeta(adapter="test", concurrency=4))


def test_parquet_round_trip_keeps_events_and_meta(tmp_path):
    trace = small_trace()
    path = trace.write(tmp_path)
    back = read_trace(path)
    assert list(back.events.columns) == list(COLUMNS)
    assert back.meta == trace.meta
    pd.testing.assert_frame_equal(back.events, trace.events, check_categorical=False)
    assert back.events.loc[1, "v_train"] == 0 and back.events.loc[1, "value"] == 1.0
    assert math.isnan(back.events.loc[2, "t0"])


def test_columns_are_written_in_their_encodings_and_round_trip_exactly(tmp_path):
    """End versions and response lengths are written DELTA_BINARY_PACKED; steps, start and train versions and prompt
    lengths plain and lz4; values as dictionaries; end times split by byte; only the float columns nullable; jumps
    both ways, -1, NaN and 2**40 come back exact."""
    b = TraceBuilder()
    for i, (step, tokens) in enumerate([(1, -1), (7, 2**40), (2, 0), (-1, 2**40 + 3), (3, -1)]):
        b.span("rollout", float(i), i + 1.5, step=step, sample=f"s{i}", group="g0", v_start=step, v_end=step + 1,
               v_train=-1, status="ok", response_tokens=tokens, prompt_tokens=tokens // 2,
               value=math.nan if i == 2 else i / 3)  # fmt: skip
    trace = b.build(TraceMeta(adapter="test"))
    path = trace.write(tmp_path)
    pd.testing.assert_frame_equal(read_trace(path).events, trace.events, check_categorical=False)
    row_group = pq.ParquetFile(path).metadata.row_group(0)
    chunks = {row_group.column(i).path_in_schema: row_group.column(i) for i in range(len(COLUMNS))}
    encodings = {col: chunk.encodings for col, chunk in chunks.items()}
    assert all("DELTA_BINARY_PACKED" in encodings[col] for col in ("v_end", "response_tokens"))
    for col in ("step", "v_start", "v_train", "prompt_tokens"):
        assert set(encodings[col]) == {"PLAIN", "RLE"} and chunks[col].compression == "LZ4", col
    assert all("RLE_DICTIONARY" in encodings[col] for col in ("value", "key", "actor"))
    assert "BYTE_STREAM_SPLIT" in encodings["t1"]
    assert "DELTA_BINARY_PACKED" not in encodings["t0"]
    schema = pq.read_schema(path)
    assert [field.name for field in schema if field.nullable] == ["t0", "t1", "value"]  # NaN is written as null


def test_a_missing_category_is_written_as_null_and_read_back(tmp_path):
    """A categorical column with a missing value (given as is, not through the builder) stays nullable on disk."""
    events = pd.DataFrame({"key": ["trainer.step", "trainer.step"], "kind": ["span", "span"], "t0": [0.0, 1.0],
                           "t1": [1.0, 2.0], "actor": pd.Categorical(["trainer", None])})  # fmt: skip
    path = Trace(events, TraceMeta(adapter="test")).write(tmp_path)
    schema = pq.read_schema(path)
    assert schema.field("actor").nullable and not schema.field("status").nullable
    assert read_trace(path).events["actor"].isna().tolist() == [False, True]


def test_a_frame_already_in_schema_is_not_copied():
    """A simulated trace's frame (pandas strings, categoricals, int64 and float64) passes through as it is."""
    workload = {"prompts_per_step": 2, "group_size": 4, "max_staleness": 1, "steps": 3}
    sim = {"concurrency": 8, "latency": 5.0}
    spec = build_spec({"name": "tiny", "adapter": "sim", "sim": sim, "workload": workload})
    trace = simulate_spec(spec)
    again = Trace(trace.events, trace.meta)
    assert all(np.shares_memory(again.events[col].to_numpy(), trace.events[col].to_numpy()) for col in ("t1", "step"))


def test_defaults_fill_optional_columns():
    trace = Trace(
        pd.DataFrame({"key": ["trainer.step"], "kind": ["span"], "t0": [0.0], "t1": [1.0]}), TraceMeta(adapter="x")
    )
    row = trace.events.iloc[0]
    assert row["step"] == -1 and row["v_start"] == -1 and row["actor"] == "" and math.isnan(row["value"])


def test_unknown_key_names_row_and_column():
    b = TraceBuilder()
    b.span("trainer.step", 0, 1, step=1)
    b.span("trainer.stepp", 1, 2, step=2)
    with pytest.raises(TraceError, match=r"row 1, column 'key': unknown event key 'trainer.stepp'"):
        b.build(TraceMeta(adapter="x")).validate()


def test_end_before_start_is_rejected():
    b = TraceBuilder()
    b.span("rollout", 0, 1)
    b.span("rollout", 5, 4)
    with pytest.raises(TraceError, match=r"row 1, column 't1': t1=4.0 is before t0=5.0"):
        b.build(TraceMeta(adapter="x")).validate()


def test_span_without_times_is_rejected():
    b = TraceBuilder()
    b.add("trainer.wait", "span", step=1)
    with pytest.raises(TraceError, match=r"row 0, column 't0': a span needs finite t0 and t1"):
        b.build(TraceMeta(adapter="x")).validate()


def test_missing_required_column():
    with pytest.raises(TraceError, match=r"missing required column\(s\) \['kind'\]"):
        Trace(pd.DataFrame({"key": ["rollout"]}), TraceMeta(adapter="x"))


def test_wrong_type_names_column_and_row():
    frame = pd.DataFrame({"key": ["rollout", "rollout"], "kind": ["point", "point"], "t0": [1.0, "soon"]})
    with pytest.raises(TraceError, match=r"column 't0', row 1: value 'soon'"):
        Trace(frame, TraceMeta(adapter="x"))


def test_unknown_kind_is_rejected():
    b = TraceBuilder()
    b.add("rollout", "interval", t0=0.0, t1=1.0)
    with pytest.raises(TraceError, match=r"row 0, column 'kind': 'interval' is not one of"):
        b.build(TraceMeta(adapter="x")).validate()


def test_truncated_parquet_gives_clear_error(tmp_path):
    path = small_trace().write(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"trace.parquet: not a readable parquet trace .*corrupt or truncated"):
        read_trace(tmp_path)


def test_garbage_file_gives_clear_error(tmp_path):
    (tmp_path / "trace.parquet").write_text("not parquet at all")
    with pytest.raises(TraceError, match="not a readable parquet trace"):
        read_trace(tmp_path)


def test_newer_schema_version_is_refused(tmp_path):
    trace = small_trace()
    trace.meta.schema_version = 99
    trace.write(tmp_path)
    with pytest.raises(TraceError, match="schema version 99 is newer"):
        read_trace(tmp_path)


def test_missing_trace_file(tmp_path):
    with pytest.raises(TraceError, match="no trace file here"):
        read_trace(tmp_path)


def test_rollout_status_outside_the_vocabulary_is_refused():
    b = TraceBuilder()
    b.span("rollout", 0, 1, status="ok")
    b.point("rollout.group", 1, status="done")  # not a rollout status
    b.span("sandbox.start", 0, 1, status="oom")  # sandbox statuses are failure reasons, not rollout statuses
    with pytest.raises(TraceError, match=r"row 1, column 'status': 'done' is not a rollout status"):
        b.build(TraceMeta(adapter="x")).validate()
