"""Records and the store: atomic writes, version refusal, concurrent writers, killed runs, queries."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from benchbed.errors import StoreError
from benchbed.record import AdapterInfo, MetricValue, RunRecord, benchbed_info, machine_info
from benchbed.store import Store, read_record, write_record


def make_record(**kw) -> RunRecord:
    return RunRecord(spec={"name": "t"}, spec_id="t-00000000", adapter=AdapterInfo(name="sim"),
                     benchbed=benchbed_info(), machine=machine_info(), **kw)  # fmt: skip


def test_record_round_trip(tmp_path):
    record = make_record(metrics={"trainer_idle_ratio": MetricValue(value=0.3, unit="ratio", higher_is_better=False)})
    write_record(tmp_path, record)
    back = read_record(tmp_path)
    assert back == record
    assert not list(tmp_path.glob(".record.*"))  # no temp files left behind


def test_newer_format_version_is_refused_and_left_untouched(tmp_path):
    data = make_record().model_dump(mode="json")
    data["format_version"] = 7
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"record format_version 7 is not supported .*upgrade benchbed"):
        read_record(tmp_path)
    assert path.read_bytes() == before


def test_not_json_and_bad_fields(tmp_path):
    (tmp_path / "record.json").write_text("{")
    with pytest.raises(StoreError, match="not valid JSON"):
        read_record(tmp_path)
    data = make_record().model_dump(mode="json")
    data["status"] = "exploded"
    (tmp_path / "record.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match="record field 'status'"):
        read_record(tmp_path)


def test_run_dirs_follow_the_layout_and_never_collide(tmp_path):
    store = Store(tmp_path)
    dirs = {store.new_run_dir("m1", "sim", "spec-1234abcd", "0123456789abcdef") for _ in range(50)}
    assert len(dirs) == 50
    one = next(iter(dirs))
    assert one.relative_to(tmp_path).parts[:3] == ("m1", "sim", "spec-1234abcd")
    assert one.name.endswith("Z-01234567")


MAKE_RECORD = """
from benchbed.record import AdapterInfo, MetricValue, RunRecord, benchbed_info, machine_info
from benchbed.store import Store, write_record

def make_record(**kw):
    return RunRecord(spec={"name": "t"}, spec_id="t-00000000", adapter=AdapterInfo(name="sim"),
                     benchbed=benchbed_info(), machine=machine_info(), **kw)
"""


def run_script(body: str, *args: str) -> subprocess.Popen[str]:
    code = MAKE_RECORD + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)


WRITER = """
import sys
store = Store(sys.argv[1])
tag = int(sys.argv[2])
for i in range(40):
    run_dir = store.new_run_dir("m", "sim", "spec-x", "c0ffee00")
    record = make_record(status="started")
    write_record(run_dir, record)
    record.status = "succeeded"
    record.metrics = {"step_time_mean_s": MetricValue(value=tag * 1000 + i, unit="s")}
    write_record(run_dir, record)
"""


def test_two_processes_writing_one_store_corrupt_neither(tmp_path):
    procs = [run_script(WRITER, str(tmp_path), str(tag)) for tag in (1, 2)]
    assert [p.wait(120) for p in procs] == [0, 0]
    records, errors = Store(tmp_path).records()
    assert errors == []
    assert len(records) == 80
    values = sorted(r.metrics["step_time_mean_s"].value for _, r in records)
    assert values == sorted([1000 + i for i in range(40)] + [2000 + i for i in range(40)])


def test_run_killed_mid_way_leaves_a_readable_started_record(tmp_path):
    proc = run_script(
        """
        import sys, time
        run_dir = Store(sys.argv[1]).new_run_dir("m", "sim", "spec-k", "deadbeef")
        write_record(run_dir, make_record(status="started"))
        print(run_dir, flush=True)
        time.sleep(60)
        """,
        str(tmp_path),
    )
    run_dir = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    record = read_record(run_dir)
    assert record.status == "started" and record.finished_at is None


def test_table_filters_and_orders_with_sql(tmp_path):
    store = Store(tmp_path)
    for status, idle in (("succeeded", 0.5), ("failed", None), ("succeeded", 0.2)):
        run_dir = store.new_run_dir("m", "sim", "spec-q", "")
        metrics = {"trainer_idle_ratio": MetricValue(value=idle, unit="ratio")} if idle is not None else {}
        write_record(run_dir, make_record(status=status, metrics=metrics))
        time.sleep(0.002)
    frame, errors = store.table(where="status = 'succeeded'", order_by="trainer_idle_ratio")
    assert errors == [] and list(frame.trainer_idle_ratio) == [0.2, 0.5]
    with pytest.raises(StoreError, match="store query failed"):
        store.table(where="no_such_column = 1")


def test_unreadable_records_are_reported_not_hidden(tmp_path):
    store = Store(tmp_path)
    good = store.new_run_dir("m", "sim", "spec-a", "")
    write_record(good, make_record())
    bad = store.new_run_dir("m", "sim", "spec-b", "")
    data = make_record().model_dump(mode="json")
    data["format_version"] = 2
    (bad / "record.json").write_text(json.dumps(data))
    records, errors = store.records()
    assert [d for d, _ in records] == [good]
    assert len(errors) == 1 and "format_version 2" in errors[0] and str(bad) in errors[0]
