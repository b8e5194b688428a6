"""The store catalog (benchbed.catalog): `ls` and `history` answer from an index kept beside the run directories,
which is updated with every record write, safe with concurrent writers (real processes), rebuilt when missing,
reconciled when stale, and never the only copy of anything."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

from benchbed.catalog import CATALOG_DIRNAME
from benchbed.nightly.history import load_points
from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord, SuiteInfo
from benchbed.store import Store, read_record, write_record


def make_record(machine: str, entry: str, night: int, idle: float, status: str = "succeeded") -> RunRecord:
    return RunRecord(
        spec={"name": entry}, spec_id=f"{entry}-0000abcd", adapter=AdapterInfo(name="sim", mode="async"),
        benchbed=BenchbedInfo(version="0.1.0", commit="c0ffee"), status=status,
        machine=MachineInfo(name=machine, host="h", os="Linux", cpu="cpu", cpu_count=2, python="3.11"),
        started_at=f"2026-01-{night + 1:02d}T00:00:00+00:00",
        suite=SuiteInfo(name="nightly-cpu", entry=entry, night=f"night{night:02d}", watch=["trainer_idle_ratio"]),
        metrics={"trainer_idle_ratio": MetricValue(value=idle, unit="ratio"),
                 "staleness_mean": MetricValue(value=idle * 10, unit="versions")},
    )  # fmt: skip


def save(store: Store, record: RunRecord) -> Path:
    run_dir = store.new_run_dir(record.machine.name, record.adapter.name, record.spec_id, "c0ffee")
    store.save(run_dir, record)
    return run_dir


def direct_rows(store: Store) -> list[tuple[str, str, float]]:
    """What reading every record.json gives: (run_id, status, idle) in path order."""
    out = []
    for path in sorted(store.root.glob("*/*/*/*/record.json")):
        r = read_record(path)
        out.append((r.run_id, r.status, r.metrics["trainer_idle_ratio"].value if r.metrics else None))
    return out


def listed(store: Store) -> list[tuple[str, str, float]]:
    frame, errors = store.table(order_by="path")
    assert errors == []
    return list(zip(frame["run_id"], frame["status"], frame["trainer_idle_ratio"], strict=True))


def test_ls_and_history_answer_from_the_index_with_the_records_values(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for night in range(3):
        save(store, make_record("m1", "a", night, 0.1 * (night + 1)))
        save(store, make_record("m2", "b", night, 0.2))
    assert listed(store) == direct_rows(store) and len(direct_rows(store)) == 6
    assert sorted(p.name for p in (tmp_path / CATALOG_DIRNAME).glob("*.parquet")) == ["m1.parquet", "m2.parquet"]
    points, errors = load_points(store, machine="m1", metric="trainer_idle_ratio")
    assert errors == [] and list(points["night"]) == ["night00", "night01", "night02"]
    assert list(points["value"]) == [0.1, 0.2, 0.30000000000000004]
    assert points["path"].iloc[0].startswith(f"{tmp_path}/m1/sim/a-0000abcd/")


def test_a_record_write_updates_the_index_in_place(tmp_path: Path) -> None:
    store = Store(tmp_path)
    save(store, make_record("m1", "a", 0, 0.5))
    store.table()  # the first query builds the index
    record = make_record("m1", "a", 1, 0.5, status="started")
    run_dir = save(store, record)
    index = pq.read_table(tmp_path / CATALOG_DIRNAME / "m1.parquet").to_pylist()
    assert [r["status"] for r in index] == ["succeeded", "started"]  # written by the writer, before any reader
    record.status = "failed"
    store.save(run_dir, record)
    index = pq.read_table(tmp_path / CATALOG_DIRNAME / "m1.parquet").to_pylist()
    assert [r["status"] for r in index] == ["succeeded", "failed"]
    assert not list((tmp_path / CATALOG_DIRNAME / "pending" / "m1").glob("*.json"))


def test_a_missing_or_damaged_index_is_rebuilt_and_nothing_else_is_touched(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for night in range(4):
        save(store, make_record("m1", "a", night, 0.1))
    expected = listed(store)
    records = {p: p.read_bytes() for p in tmp_path.glob("*/*/*/*/record.json")}
    shutil.rmtree(tmp_path / CATALOG_DIRNAME)
    assert listed(store) == expected
    (tmp_path / CATALOG_DIRNAME / "m1.parquet").write_bytes(b"not parquet")
    assert listed(store) == expected
    assert {p: p.read_bytes() for p in tmp_path.glob("*/*/*/*/record.json")} == records


def test_runs_added_or_removed_behind_benchbeds_back_are_reconciled(tmp_path: Path) -> None:
    store, elsewhere = Store(tmp_path / "store"), Store(tmp_path / "other")
    kept = save(store, make_record("m1", "a", 0, 0.1))
    gone = save(store, make_record("m1", "a", 1, 0.2))
    store.table()
    copied = save(elsewhere, make_record("m1", "a", 2, 0.3))
    shutil.copytree(copied, tmp_path / "store" / copied.relative_to(tmp_path / "other"))  # rsync from a peer
    shutil.rmtree(gone)
    frame, _ = store.table()
    assert list(frame["trainer_idle_ratio"]) == [0.1, 0.3]
    assert read_record(kept).run_id == frame["run_id"].iloc[0]


def test_an_unreadable_record_is_reported_not_hidden(tmp_path: Path) -> None:
    store = Store(tmp_path)
    save(store, make_record("m1", "a", 0, 0.1))
    bad = save(store, make_record("m1", "a", 1, 0.2))
    store.table()
    (bad / "record.json").write_text("{")  # damaged behind benchbed's back: seen when the index is rebuilt
    shutil.rmtree(tmp_path / CATALOG_DIRNAME)
    frame, errors = store.table()
    assert len(frame) == 1 and len(errors) == 1 and "record is not valid JSON" in errors[0]


def test_a_writer_killed_between_the_record_and_the_index_leaves_a_marker_the_next_reader_follows(
    tmp_path: Path,
) -> None:
    store, source = Store(tmp_path / "store"), tmp_path / "source.json"
    save(store, make_record("m1", "a", 0, 0.1))
    store.table()
    run_dir = store.new_run_dir("m1", "sim", "a-0000abcd", "c0ffee")
    store.table()  # the claimed directory is listed now, before its record exists
    record = make_record("m1", "a", 1, 0.7)
    source.write_text(record.model_dump_json())
    killed = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from benchbed.catalog import Catalog
        from benchbed.store import read_record, write_record
        def write_then_die(run_dir, record):
            write_record(run_dir, record)
            os.kill(os.getpid(), signal.SIGKILL)  # after the record, before the index
        Catalog(Path({str(store.root)!r})).save(Path({str(run_dir)!r}), read_record(Path({str(source)!r})),
                                                write_then_die)
    """)
    result = subprocess.run([sys.executable, "-c", killed], timeout=60)
    assert result.returncode == -signal.SIGKILL
    pending = store.root / CATALOG_DIRNAME / "pending" / "m1"
    assert len(list(pending.glob("*.json"))) == 1
    frame, _ = store.table()
    assert list(frame["trainer_idle_ratio"]) == [0.1, 0.7]
    assert not list(pending.glob("*.json"))  # its writer is dead: the marker is done with


WRITER = """
import sys, time
from pathlib import Path
from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord
from benchbed.store import Store
root, worker, count, go = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():  # every writer starts at once
    time.sleep(0.005)
store = Store(root)
for i in range(count):
    record = RunRecord(spec={}, spec_id=f"e{worker}-0000abcd", adapter=AdapterInfo(name="sim"),
                       benchbed=BenchbedInfo(version="0"), machine=MachineInfo(name="m1", host="h", os="L", cpu="c",
                       cpu_count=1, python="3"), metrics={"trainer_idle_ratio": MetricValue(value=worker + i / 100,
                       unit="ratio")})
    store.save(store.new_run_dir("m1", "sim", record.spec_id, "c0ffee"), record)
"""


def test_concurrent_writer_processes_on_one_store_lose_no_row(tmp_path: Path) -> None:
    store, go = Store(tmp_path / "store"), tmp_path / "go"
    save(store, make_record("m1", "seed", 0, 0.0))
    store.table()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(store.root), str(w), "15", str(go)])
               for w in range(4)]  # fmt: skip
    go.touch()
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0, 0]
    index = pq.read_table(store.root / CATALOG_DIRNAME / "m1.parquet").to_pylist()  # as the writers left it
    assert len(index) == 61 and len({r["path"] for r in index}) == 61
    assert sorted(r["trainer_idle_ratio"] for r in index) == sorted(
        [0.0, *(w + i / 100 for w in range(4) for i in range(15))]
    )
    assert listed(store) == direct_rows(store)


def test_a_read_only_store_is_answered_without_writing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    save(store, make_record("m1", "a", 0, 0.1))
    shutil.rmtree(tmp_path / CATALOG_DIRNAME, ignore_errors=True)
    os.chmod(tmp_path, 0o555)
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores the mode: make the index unwritable another way
            (tmp_path / CATALOG_DIRNAME).write_text("a file where the catalog directory would go")
        assert [r[2] for r in listed(store)] == [0.1]
    finally:
        os.chmod(tmp_path, 0o755)
        if (tmp_path / CATALOG_DIRNAME).is_file():
            (tmp_path / CATALOG_DIRNAME).unlink()


def test_the_record_is_the_source_the_index_is_a_copy(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run_dir = save(store, make_record("m1", "a", 0, 0.1))
    store.table()
    assert json.loads((run_dir / "record.json").read_text())["metrics"]["trainer_idle_ratio"]["value"] == 0.1
    write_record(run_dir, make_record("m1", "a", 0, 0.9))  # not through the store: the index does not know
    shutil.rmtree(tmp_path / CATALOG_DIRNAME)
    assert [r[2] for r in listed(store)] == [0.9]


def test_ls_text_aligns_columns_with_four_significant_digits_and_blank_missing_metrics(tmp_path: Path) -> None:
    from benchbed.cli.ls import ls_text

    store = Store(tmp_path)
    first, second = make_record("m1", "a", 0, 0.123456), make_record("m1", "b", 1, 12345.678)
    save(store, first)
    save(store, second)
    runs, errors = store.query()
    assert errors == [] and ls_text(runs).split("\n") == [
        "run           started (UTC)     status     adapter  mode   spec        idle       train sps  stale",
        f"{first.run_id}  2026-01-01 00:00  succeeded  sim      async  a-0000abcd  0.1235                1.235",
        f"{second.run_id}  2026-01-02 00:00  succeeded  sim      async  b-0000abcd  1.235e+04             1.235e+05",
    ]
    newest, _ = store.query(where="trainer_idle_ratio > 1")
    assert ls_text(newest).split("\n")[1:] == [
        f"{second.run_id}  2026-01-02 00:00  succeeded  sim      async  b-0000abcd  1.235e+04             1.235e+05"
    ]
