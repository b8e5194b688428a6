"""A cut or corrupted TensorBoard event file is read up to the damage, marked partial, and named with the byte
where the damage starts, for the history reader and for `benchbed ingest` alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchbed.adapterkit.histories.tensorboard import INSTALL_HINT, read_event_file, read_tensorboard

pytest.importorskip("tensorboard", reason=f"the `tensorboard` extra is not installed: {INSTALL_HINT}")

FIXTURES = Path(__file__).parents[1] / "fixtures"
(EVENTS,) = (FIXTURES / "histories" / "verl" / "verl-0.9.1-v1_sync" / "tensorboard_log").glob("events.out.*")


def record_offsets(data: bytes) -> list[int]:
    """Where each TFRecord starts, from the lengths alone (the fixture is whole)."""
    offsets, offset = [], 0
    while offset < len(data):
        offsets.append(offset)
        offset += int.from_bytes(data[offset : offset + 8], "little") + 16
    return offsets


def copy_with(tmp_path: Path, data: bytes) -> Path:
    folder = tmp_path / "tensorboard_log"
    folder.mkdir(parents=True)
    path = folder / EVENTS.name
    path.write_bytes(data)
    return path


def test_the_whole_fixture_reads_without_damage() -> None:
    scalars = read_event_file(EVENTS)
    assert scalars.damage is None and len(scalars.rows) > 100


def test_a_file_cut_at_60_percent_keeps_the_records_before_the_cut(tmp_path: Path) -> None:
    data = EVENTS.read_bytes()
    cut = int(len(data) * 0.6)
    whole = read_event_file(EVENTS).rows
    last_whole = max(o for o in record_offsets(data) if o <= cut)
    scalars = read_event_file(copy_with(tmp_path / "cut", data[:cut]))
    expected = read_event_file(copy_with(tmp_path / "whole-records", data[:last_whole]))
    assert expected.damage is None
    assert scalars.rows == expected.rows and 0 < len(scalars.rows) < len(whole)
    assert f"damaged at byte {last_whole} (" in scalars.damage and EVENTS.name in scalars.damage


def test_four_flipped_bytes_fail_a_checksum_where_they_are(tmp_path: Path) -> None:
    data = bytearray(EVENTS.read_bytes())
    offsets = record_offsets(bytes(data))
    target = offsets[len(offsets) // 2]
    for i in range(4):  # inside the data of the middle record, past its 12-byte header
        data[target + 14 + i] ^= 0xFF
    history = read_tensorboard(copy_with(tmp_path, bytes(data)).parent)
    assert history.partial
    (warning,) = history.warnings
    assert f"damaged at byte {target} (a record that fails its checksum)" in warning


def test_ingest_of_a_cut_event_file_is_partial_with_the_offset(benchbed, tmp_path: Path) -> None:
    data = EVENTS.read_bytes()
    run = tmp_path / "run"
    shutil.copytree(EVENTS.parent, run / "tensorboard_log")
    (run / "tensorboard_log" / EVENTS.name).write_bytes(data[: int(len(data) * 0.6)])
    done = benchbed("ingest", run / "tensorboard_log", "--adapter", "verl", "--store", tmp_path / "store", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "partial"
    assert any("damaged at byte" in w for w in record["warnings"]), record["warnings"]


def test_a_file_damaged_before_verls_keys_is_named_damaged_when_refused(benchbed, tmp_path: Path) -> None:
    """A flip in the third record keeps one scalar, too few keys to tell the framework: the refusal says where the
    file is damaged (a flip in the second keeps none, which another message names)."""
    data = bytearray(EVENTS.read_bytes())
    third = record_offsets(bytes(data))[2]
    data[third + 20] ^= 0xFF
    path = copy_with(tmp_path, bytes(data))
    done = benchbed("ingest", path.parent, "--adapter", "verl", "--store", tmp_path / "store")
    assert done.returncode == 2, done.stderr
    assert f"damaged at byte {third}" in done.stderr and "not a verl history" in done.stderr, done.stderr
