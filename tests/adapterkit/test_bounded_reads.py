"""Reads bounded by what a file can hold, not by its size: a whole-file read refused before it starts, an endless
JSON line skipped a chunk at a time, a large native copy streamed with credentials still found across chunks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchbed.adapterkit import lines
from benchbed.adapterkit.lines import JsonLines, read_utf8
from benchbed.errors import TraceError
from benchbed.pipeline import _copy_in_chunks

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_a_sparse_2_gib_state_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    state = tmp_path / "trainer_state.json"
    with state.open("wb") as fh:
        fh.truncate(2 << 30)  # sparse: no disk used, nothing read
    with pytest.raises(TraceError, match=r"trainer_state.json: 2,147,483,648 bytes, larger than such a file can be"):
        read_utf8(state)


def test_a_line_past_the_limit_is_skipped_by_number_and_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "LINE_LIMIT", 64)
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1}\n' + b"\0" * 1000 + b'\n{"step": 2}\n' + b"x" * 500)
    warnings: list[str] = []
    assert [obj["step"] for _, obj in JsonLines(path, warnings)] == [1, 2]
    assert warnings[0] == f"{path}:2: skipped line of 1,001 bytes (longer than 64: no JSON row)"
    assert warnings[1] == f"{path}:4: skipped line of 500 bytes (longer than 64: no JSON row)"


def test_a_chunked_copy_finds_a_credential_split_across_chunks(tmp_path: Path) -> None:
    src, dst = tmp_path / "big.log", tmp_path / "copy" / "big.log"
    dst.parent.mkdir()
    src.write_bytes(b"a" * 95 + b"hf_fakeToken123" + b"b" * 90)  # the value spans the 100-byte chunk boundary
    assert _copy_in_chunks(src, dst, ["hf_fakeToken123"], chunk=100) == "hf_fakeToken123"
    assert not dst.exists()
    assert _copy_in_chunks(src, dst, ["other-value-42"], chunk=100) is None
    assert dst.read_bytes() == src.read_bytes()


def test_an_areal_trace_file_with_an_endless_line_ingests_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line is skipped with its number and the spans before it kept (the limit made small here)."""
    from benchbed.pipeline import ingest
    from benchbed.store import Store

    monkeypatch.setattr(lines, "LINE_LIMIT", 4096)
    run = shutil.copytree(FIXTURES / "areal" / "grpo-async-6x8", tmp_path / "run")
    traces = run / "perf_tracer" / "master" / "traces-r0.jsonl"
    count = traces.read_bytes().count(b"\n")
    with traces.open("ab") as fh:
        fh.write(b"\0" * 100_000)
    outcome = ingest(run, "areal", Store(tmp_path / "store"))
    assert f"{traces}:{count + 1}: skipped line of 100,000 bytes" in "\n".join(outcome.record.warnings)
    assert outcome.record.metrics["trainer_idle_ratio"].value is not None
