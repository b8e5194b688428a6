"""Ground truth: the reference engine knows the version of every token and the trainer's measured wait; benchbed's
metrics, computed from the trace the `ref` adapter parses out of the engine's native log, must agree with them.

Each fixture is one real run (trainer and generator processes, a tiny MoE model, bubblewrap sandboxes); the
runs are shared by the tests of this module and kept short (4-6 steps)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .refrun import ROOT, RefRun, engine_available, load_run, run_ref

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def sync_run(tmp_path_factory) -> RefRun:
    """sync, one calculator tool turn, 30% of sandbox start attempts failing, 30% straggling checkers."""
    ref = {"mode": "sync", "tool_turns": 1, "max_new_tokens": 4, "sandbox_failure_rate": 0.3,
           "straggler_fraction": 0.3, "straggler_delay_s": 0.2}  # fmt: skip
    return run_ref(tmp_path_factory, "gt-sync", {"steps": 4, "max_staleness": 0}, ref)


@pytest.fixture(scope="module")
def one_step_off_run(tmp_path_factory) -> RefRun:
    """one_step_off with the GLM-4.5-style MoE."""
    ref = {"mode": "one_step_off", "model": {"arch": "glm4_moe"}}
    return run_ref(tmp_path_factory, "gt-one-step-off", {"steps": 4, "max_staleness": 1}, ref)


@pytest.fixture(scope="module")
def count_run(tmp_path_factory) -> RefRun:
    """`benchbed demo --real`: async, count admission with bound 1, in-flight weight updates, three batches in
    flight so the generator is kept busy (benchbed/data/ref-demo.toml)."""
    engine_available()
    store = tmp_path_factory.mktemp("demo")
    out = subprocess.run([sys.executable, "-m", "benchbed", "demo", "--real", "--store", str(store)],
                         capture_output=True, text=True, timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    report = Path(re.search(r"report: (\S+)", out.stdout).group(1))
    assert report.is_file() and "staleness_mean" in out.stdout
    twins = list(store.glob("*/sim/calibrated-ref-demo-*/*/record.json"))  # the report compares it with this run
    assert len(twins) == 1 and "calibrated-ref-demo" in report.read_text()
    return load_run(report.parent)


@pytest.fixture(scope="module")
def drop_run(tmp_path_factory) -> RefRun:
    """async, drop policy with bound 0, partial rollouts, zero-advantage filtering."""
    ref = {"mode": "async", "staleness_policy": "drop", "partial_rollouts": True, "filter_zero_adv": True,
           "max_new_tokens": 8, "concurrency": 16}  # fmt: skip
    return run_ref(tmp_path_factory, "gt-drop", {"steps": 5, "max_staleness": 0}, ref)


RUNS = ("sync_run", "one_step_off_run", "count_run", "drop_run")


def trained(run: RefRun):
    r = run.trace.of("rollout")
    return r[(r["status"] == "ok") & (r["v_train"] >= 0)]


def native_staleness(run: RefRun) -> dict[str, int]:
    """The engine's own record: v_train - v_start of every sample in every batch it sent to the trainer."""
    out = {}
    for batch in run.native("batch"):
        out.update(zip(batch["samples"], batch["staleness"], strict=True))
    return out


@pytest.mark.parametrize("name", RUNS)
def test_run_completes_and_trace_versions_equal_the_engines(name, request):
    run: RefRun = request.getfixturevalue(name)
    assert run.record.status == "succeeded", run.record.error
    steps = run.trace.of("trainer.step")
    assert sorted(steps["step"]) == list(range(1, run.record.spec["workload"]["steps"] + 1))
    truth = native_staleness(run)
    rows = trained(run)
    assert len(rows) == len(truth) > 0
    ours = dict(zip(rows["sample"], rows["v_train"] - rows["v_start"], strict=True))
    assert ours == truth


@pytest.mark.parametrize("name", RUNS)
def test_trainer_idle_equals_the_engines_measured_wait_within_one_point(name, request):
    run: RefRun = request.getfixturevalue(name)
    ours = run.metric("trainer_idle_ratio")
    assert ours == pytest.approx(run.summary["trainer_idle_ratio"], abs=0.01)
    assert run.metric("framework_trainer_idle_ratio") == pytest.approx(run.summary["trainer_idle_ratio"])
    window = [s for s in run.summary["steps"] if s["step"] > 1]
    assert run.metric("step_time_mean_s") == pytest.approx(np.mean([s["step_s"] for s in window]), abs=0.01)


def test_sync_trains_only_on_samples_of_the_current_policy(sync_run):
    rows = trained(sync_run)
    assert (rows["v_start"] == rows["v_train"]).all() and (rows["v_end"] == rows["v_train"]).all()
    assert sync_run.metric("staleness_max") == 0 and sync_run.metric("mixed_policy_fraction") == 0


def test_one_step_off_trains_every_sample_exactly_one_version_late(one_step_off_run):
    rows = trained(one_step_off_run)
    window = rows[rows["step"] > 1]
    assert len(window) and ((window["v_train"] - window["v_start"]) == 1).all()
    assert ((rows[rows["step"] == 1]["v_start"]) == 0).all()  # batch 1 has no earlier policy to lag behind
    assert one_step_off_run.metric("staleness_mean") == 1 and one_step_off_run.metric("staleness_max") == 1
    assert one_step_off_run.trace.meta.extra["model"]["arch"] == "glm4_moe"


def test_count_admission_never_exceeds_the_bound(count_run):
    staleness = trained(count_run)["v_train"] - trained(count_run)["v_start"]
    assert staleness.max() <= 1
    assert count_run.metric("staleness_max") <= 1
    # admission: at every admit, groups admitted (minus filtered/discarded, none here) <= (bound + v + 1) * P
    for i, admit in enumerate(count_run.native("admit")):
        assert i + 1 <= (1 + admit["v"] + 1) * 2


def test_in_flight_updates_give_mixed_policy_samples(count_run):
    assert count_run.metric("mixed_policy_fraction") > 0
    assert count_run.metric("staleness_in_flight_mean") > 0
    mixed = trained(count_run)
    mixed = mixed[mixed["v_end"] > mixed["v_start"]]
    spans = [json.loads(a)["versions"] for a in mixed["attrs"]]
    assert all(len(s) >= 2 and [v for v, _ in s] == sorted(v for v, _ in s) for s in spans)


def test_drop_policy_drops_exactly_the_groups_beyond_the_bound(drop_run):
    drops = drop_run.native("drop")
    assert drops, "with bound 0 and two batches in flight some groups must outlive their version"
    assert all(d["v_train"] - d["v_start"] > 0 for d in drops)
    assert (trained(drop_run)["v_train"] - trained(drop_run)["v_start"]).max() == 0
    r = drop_run.trace.of("rollout")
    dropped_groups = set(r[r["status"] == "dropped_stale"]["group"])
    assert dropped_groups == {d["group"] for d in drops}
    assert drop_run.metric("dropped_stale_fraction") > 0


def test_partial_rollouts_resume_under_new_weights_in_the_same_sandbox(drop_run):
    resumes = drop_run.native("resume")
    assert resumes and all(e["env_staleness"] >= 0 for e in resumes)
    r = drop_run.trace.of("rollout")
    attrs = [json.loads(a) for a in r["attrs"]]
    resumed = [a for a in attrs if a["resumes"] > 0]
    assert resumed and all("staleness_env" in a for a in resumed)
    last = {e["sample"]: e["env_staleness"] for e in resumes}  # the engine's own figure at each sample's last resume
    assert {sid: a["staleness_env"] for sid, a in zip(r["sample"], attrs, strict=True) if a["resumes"]} == {
        sid: last[sid] for sid, a in zip(r["sample"], attrs, strict=True) if a["resumes"]
    }
    starts = drop_run.trace.of("sandbox.start")
    ok = starts[starts["status"] == "ok"]
    assert ok["sample"].is_unique  # one sandbox per rollout, kept across its resumes


def test_zero_advantage_groups_are_filtered_and_never_trained(drop_run):
    groups = drop_run.trace.of("rollout.group")
    filtered = groups[groups["status"] == "filtered_zero_adv"]
    assert (filtered["value"] == 0).all()
    batched = {g for b in drop_run.native("batch") for g in b["groups"]}
    assert batched.isdisjoint(set(filtered["group"]))
    trained_groups = groups[groups["group"].isin(batched)]
    assert (trained_groups["value"] > 0).all()


def test_sandbox_metrics_come_from_the_real_sandbox_starts(sync_run):
    native = [e for e in sync_run.native("sandbox")]
    ready = {e["key"]: e["t"] for e in native if e["step"] == "ready"}
    admitted = {(e["key"], e["attempt"]): e["t"] for e in native if e["step"] == "admitted"}
    failed = [e for e in native if e["step"] == "failed"]
    starts = sync_run.trace.of("sandbox.start")
    assert len(starts) == len(ready) + len(failed)
    assert (starts["status"] == "ok").sum() == len(ready) > 0
    assert failed and all("bwrap" in e["attrs"]["message"] for e in failed)  # bubblewrap's own failure
    assert sync_run.metric("sandbox_init_failure_rate") == pytest.approx(len(failed) / len(starts))
    ok = starts[starts["status"] == "ok"]
    native_s = sorted(
        ready[k] - admitted[(k, json.loads(a)["attempt"])] for k, a in zip(ok["sample"], ok["attrs"], strict=True)
    )
    assert sorted((ok["t1"] - ok["t0"]).round(6)) == pytest.approx(native_s, abs=1e-5)
    assert sync_run.metric("sandbox_start_p50_s") == pytest.approx(np.percentile(native_s, 50), abs=1e-5)


def test_tool_turns_and_checkers_run_in_each_rollouts_sandbox(sync_run):
    rollouts = sync_run.trace.of("rollout")
    ran = rollouts[rollouts["status"].isin(["ok", "discarded", "filtered_zero_adv"])]
    execs = sync_run.trace.of("sandbox.exec")
    per_sample = execs.groupby("sample", observed=True).size()
    assert all(per_sample.get(s, 0) == 2 for s in ran["sample"])  # calculator, then checker
    stragglers = [s for s, a in zip(rollouts["sample"], rollouts["attrs"], strict=True) if json.loads(a)["straggler"]]
    slow = execs[execs["sample"].isin(stragglers)]
    assert len(slow) and (slow.groupby("sample", observed=True)["value"].max() >= 0.2).all()


def test_a_dead_generator_ends_the_run_partial_with_a_clear_error(tmp_path_factory):
    ref = {"mode": "sync", "generators": 2, "kill_generator_at_step": 2}
    run = run_ref(tmp_path_factory, "gt-death", {"steps": 4, "max_staleness": 0}, ref)
    assert run.record.status == "partial"
    tail = run.record.error.log_tail
    assert "generator worker gen0" in tail and "died with exit code 13" in tail
    assert run.record.error.exit_code == 1
    assert run.summary["steps_done"] < 4
    assert "trainer_idle_ratio" in run.record.metrics  # the steps that ran are still measured
    for pid in run.native("spawned")[0]["pids"].values():
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().split()[2] == "Z", f"engine worker {pid} left running"


@pytest.fixture(scope="module")
def partial_experiment_run(tmp_path_factory) -> RefRun:
    """experiments/ref-partial.toml itself, as a user runs it."""
    from benchbed.pipeline import execute
    from benchbed.spec import load_spec
    from benchbed.store import Store

    engine_available()
    outcome = execute(load_spec(ROOT / "experiments" / "ref-partial.toml"), Store(tmp_path_factory.mktemp("p")))
    assert outcome.trace is not None, outcome.record.error
    return load_run(outcome.run_dir)


def test_the_partial_rollouts_experiment_resumes_rollouts_and_reports_their_environment_staleness(
    partial_experiment_run,
):
    """ref-partial exercises what it is named for, and staleness_env_* equal the engine's own figures."""
    from benchbed.metrics.context import MetricContext

    run = partial_experiment_run
    last = {e["sample"]: e["env_staleness"] for e in run.native("resume")}
    assert len(last) >= 10  # rollouts resumed under new weights
    trained = MetricContext(run.trace, run.record.spec["warmup_steps"]).trained_in_window
    expected = [last.get(sid, 0) for sid in trained["sample"]]
    assert run.metric("staleness_env_mean") == pytest.approx(float(np.mean(expected)))
    assert run.metric("staleness_env_max") == max(expected)
    # Some rollout resumed under weights newer than its environment's start; whether a trained one did depends on
    # the machine's pace (a loaded machine trains the window before any resumed rollout lands in it).
    assert max(last.values()) >= 1
