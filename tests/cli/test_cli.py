"""The command line (docs/reference/cli.md), run as a user would: exit codes, one-line errors, nothing
stored overwritten."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbed.store import read_record
from benchbed.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "experiments" / "quickstart.toml"
SMALL = ["--set", "workload.steps=20"]


def benchbed(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchbed", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)  # fmt: skip


def snapshot(root: Path) -> dict[str, bytes]:
    """Every stored file but the catalog (an index derived from the records, rebuilt at will)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and "_catalog" not in p.relative_to(root).parts)
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    result = benchbed("simulate", QUICKSTART, *SMALL, "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    run_dir = next(store.glob(f"*/sim/{record['spec_id']}/*"))
    return store, run_dir, record


def test_simulate_json_prints_exactly_the_record(stored_run):
    store, run_dir, record = stored_run
    assert record["status"] == "succeeded" and record["adapter"]["mode"] == "async/count"
    assert record == read_record(run_dir).model_dump(mode="json")
    assert 0 < record["metrics"]["trainer_idle_ratio"]["value"] < 1
    assert record["trace_events"] == len(read_trace(run_dir).events)
    assert (run_dir / "logs" / "stderr.log").exists() and (run_dir / "sim-spec.json").exists()


def test_run_with_matrix_stores_one_run_per_point(tmp_path):
    spec = tmp_path / "m.toml"
    spec.write_text(QUICKSTART.read_text() + '\n[matrix]\n"sim.concurrency" = [32, 128]\n')
    result = benchbed("run", spec, *SMALL, "--store", tmp_path / "store", "--json")
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert [r["spec"]["sim"]["concurrency"] for r in records] == [32, 128]
    idle = [r["metrics"]["trainer_idle_ratio"]["value"] for r in records]
    assert idle[0] > idle[1]  # more generator slots, less trainer waiting


def test_dry_run_prints_the_command_and_launches_nothing(tmp_path):
    result = benchbed("run", QUICKSTART, "--dry-run", "--store", tmp_path / "store")
    assert result.returncode == 0, result.stderr
    assert "-m benchbed.sim --spec sim-spec.json --out ." in result.stdout
    assert "# file sim-spec.json:" in result.stdout
    assert not (tmp_path / "store").exists()


def test_ls_lists_stored_runs(stored_run):
    store, _, record = stored_run
    result = benchbed("ls", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["run_id"] for r in rows] == [record["run_id"]]
    table = benchbed("ls", "--store", store)
    assert record["run_id"] in table.stdout and "succeeded" in table.stdout


def test_ingest_of_a_sim_run_copies_artifacts(stored_run, tmp_path):
    _, run_dir, record = stored_run
    result = benchbed("ingest", run_dir, "--adapter", "sim", "--store", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    ingested = json.loads(result.stdout)
    assert ingested["metrics"]["trainer_idle_ratio"] == record["metrics"]["trainer_idle_ratio"]
    new_dir = next(tmp_path.glob("*/sim/*/*"))
    assert (new_dir / "native" / "sim-spec.json").exists() and (new_dir / "trace.parquet").exists()


def test_report_writes_html_and_prints_markdown(stored_run, tmp_path):
    _, run_dir, _ = stored_run
    out = tmp_path / "r.html"
    result = benchbed("report", run_dir, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "trainer_idle_ratio" in result.stdout and "|" in result.stdout
    assert out.read_text().lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.toml"], "missing.toml: spec file not found"),
        (["run", QUICKSTART, "--set", "workload.group_sise=4"], "quickstart.toml: unknown field 'workload.group_sise'"),
        (["simulate", QUICKSTART, "--set", "sim.concurrency=-8"],
         "quickstart.toml: field 'sim.concurrency': Input should be greater than 0"),
        (["run", QUICKSTART, "--set", 'adapter="verll"'], "unknown adapter 'verll'"),
        (["ingest", "nowhere", "--adapter", "sim"], "nowhere: no such file or directory"),
    ],
)  # fmt: skip
def test_bad_input_gets_one_line_error_and_stores_nothing(tmp_path, args, message):
    store = tmp_path / "store"
    result = benchbed(*args, "--store", store, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchbed: error:") and message in lines[0], result.stderr
    assert not store.exists()


def test_corrupt_trace_is_refused_and_the_store_untouched(stored_run, tmp_path):
    store, run_dir, _ = stored_run
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "trace.parquet").write_bytes((run_dir / "trace.parquet").read_bytes()[:500])
    before = snapshot(store)
    result = benchbed("ingest", broken, "--adapter", "sim", "--store", store)
    assert result.returncode == 2
    assert "trace.parquet: not a readable parquet trace" in result.stderr
    assert snapshot(store) == before


def test_newer_record_in_the_store_is_reported_and_kept(stored_run, tmp_path):
    store, run_dir, record = stored_run
    future = store / "m" / "sim" / "spec-future" / "20990101T000000.000000Z-ffffffff"
    future.mkdir(parents=True)
    data = dict(record, format_version=99)
    (future / "record.json").write_text(json.dumps(data))
    try:
        before = snapshot(store)
        result = benchbed("ls", "--store", store)
        assert result.returncode == 0  # the unreadable record is skipped with a warning, the others listed
        assert "warning: skipped" in result.stderr
        assert "format_version 99 is not supported" in result.stderr and "upgrade benchbed" in result.stderr
        assert record["run_id"] in result.stdout  # readable runs are still listed
        report = benchbed("report", future)
        assert report.returncode == 2 and "format_version 99" in report.stderr
        assert snapshot(store) == before
    finally:
        (future / "record.json").unlink()
        future.rmdir()


def test_failed_launch_keeps_a_failed_record_with_the_log_tail(tmp_path):
    spec = tmp_path / "bad.toml"
    # pass_rate 1.0 with zero-advantage filtering: every group is filtered, the simulator gives up
    spec.write_text(QUICKSTART.read_text().replace("filter_zero_adv = false", "filter_zero_adv = true")
                    .replace('pass_rate = { dist = "beta", a = 0.5, b = 0.5 }', "pass_rate = 1.0"))  # fmt: skip
    result = benchbed("run", spec, *SMALL, "--store", tmp_path / "store", "--json")
    assert result.returncode == 1
    record = json.loads(result.stdout)
    assert record["status"] == "failed"
    assert record["error"]["exit_code"] == 2 and "no trainable groups" in record["error"]["log_tail"]


def test_help_documents_every_command():
    result = benchbed("--help")
    for command in ("run", "simulate", "ingest", "report", "ls", "demo"):
        assert command in result.stdout
    run_help = benchbed("run", "--help").stdout
    for option in ("--set", "--launcher", "--store", "--json", "--dry-run", "--timeout"):
        assert option in run_help


def test_ctrl_c_stops_the_launch_and_keeps_a_failed_record(tmp_path):
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchbed", "run", str(QUICKSTART), "--set", "workload.steps=100000",
         "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(store.glob("*/sim/*/*/logs/stderr.log")) and time.monotonic() < deadline:
        time.sleep(0.2)
    run_dir = next(store.glob("*/sim/*/*"))
    time.sleep(1.0)  # the simulator is running now
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    record = read_record(run_dir)
    assert record.status == "failed" and "interrupted" in record.error.message
    leftovers = [p for p in os.listdir("/proc") if p.isdigit() and _is_sim_of(p, run_dir)]
    assert leftovers == []


def _is_sim_of(pid: str, run_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return b"benchbed.sim" in cmdline and cwd == str(run_dir)


@pytest.mark.parametrize(("status", "error", "code"), [("succeeded", None, None), ("partial", None, None),
                                                        ("partial", "launch exited (exit code 13)", 1),
                                                        ("failed", "launch exited (exit code 2)", 1)])  # fmt: skip
def test_exit_status_follows_the_launch(tmp_path, status, error, code):
    """A launch that failed exits 1 whether or not a partial trace was recovered; a cut log alone does not."""
    from benchbed.cli.runs import _exit_for
    from benchbed.pipeline import RunOutcome
    from benchbed.record import ErrorInfo, RunRecord

    record = RunRecord.model_construct(status=status, error=ErrorInfo(message=error) if error else None)
    if code is None:
        _exit_for([RunOutcome(tmp_path, record, None)])
        return
    with pytest.raises(SystemExit) as exc:
        _exit_for([RunOutcome(tmp_path, record, None)])
    assert exc.value.code == code


def test_an_error_after_a_progress_bar_is_the_only_line_on_a_piped_stderr(tmp_path: Path) -> None:
    """With stderr not a terminal the progress bar is not drawn, so it leaves no blank line before the error."""
    blocker = tmp_path / "store"
    blocker.write_text("a file where the store should be")
    out = subprocess.run([sys.executable, "-m", "benchbed", "demo", "--store", str(blocker / "x")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.splitlines() == [out.stderr.strip()] and out.stderr.startswith("benchbed: error: ")
