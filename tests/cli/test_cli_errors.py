"""The command line under hostile input, signals and unreadable files, run as a user would: every
path succeeds or prints ONE line `benchbed: error: ...` and exits 1 or 2, with nothing half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.store import read_record

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "experiments" / "quickstart.toml"
SMALL = ["--set", "workload.steps=12"]
# As root, file modes do not stop reads; drop the capabilities that bypass them, as an ordinary user has none.
UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []


def benchbed(*args: object, env: dict[str, str] | None = None, unprivileged: bool = False,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """The command line in a process of its own when it must drop privileges, else in this one (CliRunner: the
    same entry point, exit status and streams, without paying the interpreter start-up each time)."""
    argv = [str(a) for a in args]
    if unprivileged:
        return subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "benchbed", *argv], capture_output=True,
                              text=True, env=env, timeout=timeout)  # fmt: skip
    result = CliRunner().invoke(cli, argv, env=env, prog_name="benchbed")
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def one_error_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchbed: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def records_in(store: Path) -> list[Path]:
    return sorted(store.glob("*/*/*/*/record.json"))


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("store")
    result = benchbed("simulate", QUICKSTART, *SMALL, "--store", store)
    assert result.returncode == 0, result.stderr
    return records_in(store)[0].parent


# ------------------------------------------------------------------ ingest: links, unreadable, endless inputs
def test_ingest_with_dangling_looping_and_parent_links_copies_only_the_run(sim_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.parquet").write_bytes((sim_run / "trace.parquet").read_bytes())
    (run / "notes.txt").write_text("kept\n")
    (run / "dangling").symlink_to(tmp_path / "nowhere")
    (run / "loop").symlink_to(run / "loop")
    (run / "up").symlink_to("..")
    (tmp_path / "big-sibling.bin").write_bytes(b"x" * 4096)  # what following `up` would drag in
    store = tmp_path / "store"
    result = benchbed("ingest", run, "--adapter", "sim", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "succeeded"
    native = records_in(store)[0].parent / "native"
    assert sorted(p.name for p in native.rglob("*")) == ["notes.txt"]  # links left out, none followed
    assert any("left out 3 symbolic link(s), not followed" in w for w in record["warnings"])


def test_unreadable_input_file_and_subdirectory(sim_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.parquet").write_bytes((sim_run / "trace.parquet").read_bytes())
    secret_dir = run / "private"
    secret_dir.mkdir()
    (secret_dir / "x.log").write_text("x\n")
    secret_dir.chmod(0o000)
    store = tmp_path / "store"
    try:
        ok = benchbed("ingest", run, "--adapter", "sim", "--store", store, "--json", unprivileged=True)
        assert ok.returncode == 0, ok.stderr
        assert any("left out 1 unreadable directory(ies)" in w for w in json.loads(ok.stdout)["warnings"])
    finally:
        secret_dir.chmod(0o755)
    log = tmp_path / "trainer.log"
    log.write_text("10:00:01 SUCCESS Step 1 | 9.5s | Loss: 0.01\n")
    log.chmod(0o000)
    store2 = tmp_path / "store2"
    result = benchbed("ingest", log, "--adapter", "prime_rl", "--store", store2, unprivileged=True)
    assert result.returncode == 2
    one_error_line(result, f"{log}: cannot read (permission denied)")
    assert not store2.exists()


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_devices_and_fifos_are_refused_at_once(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    result = benchbed("ingest", path, "--adapter", "verl", "--store", tmp_path / "store", timeout=60)
    assert result.returncode == 2
    one_error_line(result, f"{path}: is a {'FIFO' if kind == 'fifo' else 'device'}, not a file or directory")
    assert not (tmp_path / "store").exists()


# ------------------------------------------------------------------------------------- the store
def test_ls_skips_an_unreadable_record_with_a_warning(sim_run, tmp_path):
    store = tmp_path / "store"
    for name in ("a", "b"):
        target = store / "m" / "sim" / "spec" / name
        target.mkdir(parents=True)
        (target / "record.json").write_text((sim_run / "record.json").read_text())
    bad = store / "m" / "sim" / "spec" / "b" / "record.json"
    bad.chmod(0o000)
    result = benchbed("ls", "--store", store, "--json", unprivileged=True)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == 1
    assert f"benchbed: warning: skipped {bad}: cannot read the run record (Permission denied)" in result.stderr


def test_read_only_store_gives_one_line_and_nothing_runs(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o555)
    try:
        result = benchbed("simulate", QUICKSTART, *SMALL, "--store", store, unprivileged=True)
    finally:
        store.chmod(0o755)
    assert result.returncode == 2
    one_error_line(result, f"{store}: cannot create a run directory in the store", "pass a writable --store")
    assert not list(store.iterdir())


def test_unreadable_trace_is_not_called_corrupt(sim_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.parquet").write_bytes((sim_run / "trace.parquet").read_bytes())
    (run / "trace.parquet").chmod(0o000)
    result = benchbed("ingest", run / "trace.parquet", "--adapter", "sim", "--store", tmp_path / "s",
                      unprivileged=True)  # fmt: skip
    assert result.returncode == 2
    line = one_error_line(result, "trace.parquet: cannot read")
    assert "corrupt" not in line


# --------------------------------------------------------------------------------- one line, always
@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["ingest", "x"], ["benchbed ingest: x: no such file or directory", "--help"]),
        (["ingest", "x", "--adapter", "sim", "--warmup-steps", "many"], ["'many' is not a valid integer"]),
        (["ls", "--where", "no_such_column = 1"], ["store query failed: --where 'no_such_column = 1'"]),
        (["frobnicate"], ["No such command 'frobnicate'"]),
    ],
)
def test_usage_duckdb_and_click_errors_are_one_line(tmp_path, args, needles):
    (tmp_path / "store").mkdir()
    result = benchbed(*args, "--store", tmp_path / "store") if args[0] != "frobnicate" else benchbed(*args)
    assert result.returncode == 2
    one_error_line(result, *needles)


def test_corrupt_parquet_is_one_line(sim_run, tmp_path):
    broken = tmp_path / "trace.parquet"
    broken.write_bytes((sim_run / "trace.parquet").read_bytes()[:300])
    result = benchbed("ingest", broken, "--adapter", "sim", "--store", tmp_path / "store")
    assert result.returncode == 2
    one_error_line(result, "trace.parquet: not a readable parquet trace")


def test_adapter_table_errors_name_the_spec_file(tmp_path):
    spec = tmp_path / "v.toml"
    spec.write_text('name = "v"\nadapter = "verl"\n[verl]\nbogus = 1\n')
    result = benchbed("run", spec, "--dry-run", "--store", tmp_path / "store")
    assert result.returncode == 2
    line = one_error_line(result)
    assert line.startswith(f"benchbed: error: {spec}: ") and "bogus" in line


# ------------------------------------------------------------------------------------------- matrix
def test_whole_matrix_is_validated_before_the_first_point_runs(tmp_path):
    spec = tmp_path / "m.toml"
    spec.write_text(QUICKSTART.read_text() + '\n[matrix]\n"sim.concurrency" = [64, -1]\n')
    result = benchbed("run", spec, *SMALL, "--store", tmp_path / "store")
    assert result.returncode == 2
    one_error_line(result, "matrix point {'sim.concurrency': -1}", "sim.concurrency")
    assert not records_in(tmp_path / "store")


# -------------------------------------------------------------------------------------- secrets
TOKEN = "hf_s3cr3tT0kenValue42"


def test_a_secret_value_is_masked_everywhere(tmp_path):
    env = {"HF_TOKEN": TOKEN}
    spec = tmp_path / "v.toml"
    spec.write_text(f'name = "v"\nadapter = "verl"\n[verl.env]\nHF_ENDPOINT = "https://user:{TOKEN}@hub.example.com"\n')
    dry = benchbed("run", spec, "--dry-run", "--store", tmp_path / "s", env=env)
    assert dry.returncode == 0, dry.stderr
    assert TOKEN not in dry.stdout and "https://user:***@hub.example.com" in dry.stdout
    sim = tmp_path / "sim.toml"
    sim.write_text(QUICKSTART.read_text().replace('model = "Qwen/Qwen3-30B-A3B"', f'model = "{TOKEN}/Qwen3"'))
    store = tmp_path / "store"
    run = benchbed("simulate", sim, *SMALL, "--store", store, env=env)
    assert run.returncode == 0, run.stderr
    run_dir = records_in(store)[0].parent
    assert TOKEN not in (run_dir / "record.json").read_text()
    assert read_record(run_dir).spec["workload"]["model"] == "***/Qwen3"
    report = benchbed("report", run_dir, env=env)
    assert report.returncode == 0 and TOKEN not in report.stdout
    assert TOKEN not in (run_dir / "report.html").read_text()
    for log in (run_dir / "logs").iterdir():
        assert TOKEN not in log.read_text()


@pytest.mark.parametrize("adapter", ["verl", "slime", "prime_rl"])
def test_one_secret_policy_for_every_adapter(tmp_path, adapter):
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "s"\nadapter = "{adapter}"\n[{adapter}.env]\nWANDB_API_KEY = "abcdefgh"\n')
    result = benchbed("run", spec, "--dry-run", "--store", tmp_path / "store")
    assert result.returncode == 2
    one_error_line(result, f"{spec}: [{adapter}.env] sets WANDB_API_KEY: secrets must come from the environment")
    assert "abcdefgh" not in result.stderr


# ----------------------------------------------------------------------- failed run, report, signals
def test_a_failed_run_without_a_trace_can_be_reported(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(QUICKSTART.read_text().replace("filter_zero_adv = false", "filter_zero_adv = true")
                    .replace('pass_rate = { dist = "beta", a = 0.5, b = 0.5 }', "pass_rate = 1.0"))  # fmt: skip
    store = tmp_path / "store"
    assert benchbed("run", spec, *SMALL, "--store", store).returncode == 1
    run_dir = records_in(store)[0].parent
    assert not (run_dir / "trace.parquet").exists()
    result = benchbed("report", run_dir)
    assert result.returncode == 0, result.stderr
    html = (run_dir / "report.html").read_text()
    assert "failed" in result.stdout and "launch exited (exit code 2)" in html and "no trainable groups" in html


def test_a_run_that_cannot_start_says_why_in_one_line_on_stderr(tmp_path, monkeypatch):
    """The TRL-vLLM spec names a Python inside `.envs/trl-vllm` of the working directory, which this one lacks: the
    run fails and is recorded as failed, its summary stays on stdout and the reason, with what to do, is stderr's
    one line."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "trl-vllm-cpu.toml"
    spec.write_text((REPO / "experiments" / "trl-vllm-cpu.toml").read_text())
    result = benchbed("run", spec, "--store", tmp_path / "store")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"cannot start '{tmp_path}/.envs/trl-vllm/bin/python': not found; build that environment with "
        "`make trl-vllm` in the benchbed checkout"
    ]
    assert "run directory:" in result.stdout and "cannot start" not in result.stdout
    (record,) = records_in(tmp_path / "store")
    assert json.loads(record.read_text())["status"] == "failed"


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_stops_the_launch_and_finalises_the_record(tmp_path, sig):
    store = tmp_path / "store"
    # 20,000 steps: 1.28M samples, seconds of simulation, and 1.3 GB for the simulator's memory check (a larger run
    # can be refused while the other worker's verl and vLLM hold memory, which ends the launch before the signal)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchbed", "simulate", str(QUICKSTART), "--set", "workload.steps=20000",
         "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180  # a loaded machine starts Python and benchbed's imports slowly
    children: list[int] = []
    while not children and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        children = _children_of(proc.pid)
    if not children:
        proc.kill()
        _, stderr = proc.communicate(timeout=60)
        raise AssertionError(f"the simulator never started (benchbed exit {proc.returncode}): {stderr[-2000:]}")
    time.sleep(0.5)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig.value
    assert stderr.strip().splitlines()[-1].startswith(f"benchbed: error: interrupted by {sig.name}")
    record = read_record(records_in(store)[0].parent)
    assert record.status == "failed" and f"interrupted by {sig.name}" in record.error.message
    for child in children:
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


# ------------------------------------------------------------------ nothing half-written by benchbed's failure
def test_an_ingest_that_cannot_finish_leaves_no_run_behind(sim_run, tmp_path, monkeypatch):
    import errno

    from benchbed import pipeline

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "store"))

    monkeypatch.setattr(pipeline, "copy_native", disk_full)
    store = tmp_path / "store"
    result = benchbed("ingest", sim_run, "--adapter", "sim", "--store", store)
    assert result.returncode == 2
    one_error_line(result, "No space left on device")
    assert not records_in(store) and not list(store.glob("*/*/*/*"))  # no run directory, no `started` record


def test_benchbeds_own_failure_during_a_run_finalises_the_record(tmp_path, monkeypatch):
    from benchbed.launch import local

    def broken_launcher(*args, **kwargs):
        raise OSError(28, "No space left on device", "logs/stdout.log")

    monkeypatch.setattr(local, "run_plan", broken_launcher)
    store = tmp_path / "store"
    result = benchbed("simulate", QUICKSTART, *SMALL, "--store", store)
    assert result.returncode == 2
    one_error_line(result, "logs/stdout.log: No space left on device")
    record = read_record(records_in(store)[0].parent)
    assert record.status == "failed" and "benchbed failed: OSError" in record.error.message
