"""parse() on fixtures written by verl 0.9.1's own code: modes, step breakdown, verl's own figures, bad input."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed import keys as K
from benchbed.adapter import get_adapter
from benchbed.errors import NotThisFrameworkError
from benchbed.metrics import compute_metrics

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verl"
ADAPTER = VerlAdapter()
# timers that run after verl's `step` timer closes, per mode (they still belong to the trainer's step)
OUTSIDE = {
    "v1_sync": ("testing", "dump_rollout_generations"),
    "v1_colocate_async": ("testing", "dump_rollout_generations"),
    "v1_separate_async": ("testing", "dump_rollout_generations"),
    "v0": ("start_profile", "stop_profile"),
    "one_step_off": ("testing", "save_checkpoint"),
    "fully_async": ("save_checkpoint",),
}
COMPUTE = ("old_log_prob", "ref", "values", "adv", "update_actor", "update_critic")


def run(name: str) -> Path:
    return FIXTURES / f"verl-0.9.1-{name}"


def jsonl_steps(path: Path) -> dict[int, dict]:
    """Step -> merged data, read plainly (several log calls can share a step)."""
    out: dict[int, dict] = {}
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        out.setdefault(obj["step"], {}).update(obj["data"])
    return out


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.of(key)
    return dict(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


def expected_breakdown(mode: str, data: dict) -> dict[str, float]:
    """The step breakdown (docs/reference/metrics.md) computed straight from one record's timing keys."""
    t = {k.removeprefix("timing_s/"): v for k, v in data.items() if k.startswith("timing_s/")}
    step = t["step"] + sum(t.get(k, 0.0) for k in OUTSIDE[mode])
    sync = t.get("sync_rollout_weights", 0.0) if mode == "one_step_off" else t.get("update_weights", 0.0)
    out = {
        K.TRAINER_STEP: step,
        K.TRAINER_WAIT: t.get("gen", 0.0),
        K.TRAINER_COMPUTE: sum(t.get(k, 0.0) for k in COMPUTE),
        K.TRAINER_WEIGHT_SYNC: sync + t.get("timing_s/param_sync", 0.0),
        K.TRAINER_CHECKPOINT: t.get("save_checkpoint", 0.0),
    }
    out[K.TRAINER_OTHER] = step - sum(v for k, v in out.items() if k != K.TRAINER_STEP)
    return out


def test_registered_under_entry_point() -> None:
    assert isinstance(get_adapter("verl"), VerlAdapter)


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("v1_sync", "v1_sync"),
        ("v1_colocate_async", "v1_colocate_async"),
        ("v1_separate_async", "v1_separate_async"),
        ("v0", "v0"),
        ("one_step_off", "one_step_off"),
        ("fully_async", "fully_async"),
    ],
)
def test_every_mode_gives_the_breakdown_the_definitions_imply(name: str, mode: str) -> None:
    trace = ADAPTER.parse(run(name))
    assert trace.meta.mode == mode
    assert trace.meta.framework == "verl"
    steps = {s: d for s, d in jsonl_steps(run(name) / "metrics.jsonl").items() if "timing_s/step" in d}
    assert sorted(agg(trace, K.TRAINER_STEP)) == sorted(steps)
    for key in (K.TRAINER_STEP, *K.TRAINER_COMPONENTS):
        got = agg(trace, key)
        for step, data in steps.items():
            assert got[step] == pytest.approx(expected_breakdown(mode, data)[key], abs=1e-9), (key, step)
    parts = sum(np.array(list(agg(trace, k).values())) for k in K.TRAINER_COMPONENTS)
    assert parts == pytest.approx(np.array(list(agg(trace, K.TRAINER_STEP).values())))
    assert not trace.meta.partial


def test_idle_ratio_matches_sum_of_gen_over_step() -> None:
    trace = ADAPTER.parse(run("v1_sync"))
    steps = {s: d for s, d in jsonl_steps(run("v1_sync") / "metrics.jsonl").items() if s > 1 and "timing_s/step" in d}
    want = sum(d["timing_s/gen"] for d in steps.values()) / sum(
        d["timing_s/step"] + d.get("timing_s/testing", 0.0) + d.get("timing_s/dump_rollout_generations", 0.0)
        for d in steps.values()
    )
    metrics = compute_metrics(trace, warmup_steps=1)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(want)
    ratios = [metrics[f"trainer_{n}_ratio"].value for n in ("idle", "compute", "weight_sync", "checkpoint", "other")]
    assert sum(ratios) == pytest.approx(1.0)


def test_fully_async_cycles_are_steps_and_verl_idle_ratio_is_kept() -> None:
    trace = ADAPTER.parse(run("fully_async"))
    data = jsonl_steps(run("fully_async") / "metrics.jsonl")
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 2, 3, 4]  # step = parameter version, two log calls merged
    framework = agg(trace, "framework.trainer_idle_ratio")
    ours = {s: agg(trace, K.TRAINER_WAIT)[s] / agg(trace, K.TRAINER_STEP)[s] for s in framework}
    for step, value in framework.items():
        assert value == pytest.approx(data[step]["fully_async/trainer/idle_ratio"])
        # verl divides gen by its step timer only; param_sync is inside it and save_checkpoint is not logged here
        assert ours[step] == pytest.approx(value)
    assert trace.meta.extra["local_steps_per_step"] == {1: 2, 2: 2, 3: 2, 4: 2}
    assert agg(trace, "native.fully_async/rollouter/idle_ratio")[2] == pytest.approx(
        data[2]["fully_async/rollouter/idle_ratio"]
    )
    assert agg(trace, "framework.mixed_policy_fraction")[3] == pytest.approx(
        data[3]["fully_async/partial/partial_ratio"]
    )
    assert set(agg(trace, K.TRAINER_WEIGHT_SYNC).values()) != {0.0}  # the doubled timing_s/timing_s/param_sync key


def test_sizes_come_from_a_whole_config_only() -> None:
    from benchbed.adapters.verl.parse import _sizes

    cfg = {
        "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 4}, "rollout": {"n": 4}},
        "async_training": {"require_batches": 1, "trigger_parameter_sync_step": 2},
        "data": {"train_batch_size": 8},
    }
    # fully_async: 4 prompts x 1 batch x 4 responses per local step, 2 local steps per sync cycle
    assert _sizes("fully_async", cfg, None) == (32, 16, 4)
    assert _sizes("v1_sync", cfg, None) == (32, None, 4)
    assert _sizes("v1_sync", {**cfg, "_partial": True}, None) == (None, None, None)
    assert _sizes("v1_sync", {**cfg, "_partial": True}, {"samples_per_step": 64, "group_size": 8}) == (64, None, 8)


def test_v1_staleness_figures_are_framework_rows() -> None:
    trace = ADAPTER.parse(run("v1_colocate_async"))
    data = jsonl_steps(run("v1_colocate_async") / "metrics.jsonl")
    got = agg(trace, "framework.staleness_mean")
    assert got == {s: pytest.approx(d["training/off_policy/trajectory_staleness_worst/mean"]) for s, d in data.items()
                   if "training/off_policy/trajectory_staleness_worst/mean" in d}  # fmt: skip
    assert "framework_staleness_mean" in compute_metrics(trace, warmup_steps=1)


def test_rollout_dumps_give_groups_and_zero_adv_fraction() -> None:
    trace = ADAPTER.parse(run("v1_sync"))
    groups: dict[tuple[int, str], list[float]] = {}
    for path in sorted((run("v1_sync") / "rollout_data").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            groups.setdefault((row["step"], row["uid"].rsplit("_", 2)[0]), []).append(row["score"])
    window = {k: v for k, v in groups.items() if k[0] > 1}
    want = sum(1 for v in window.values() if max(v) == min(v)) / len(window)
    assert len(trace.of(K.ROLLOUT)) == sum(len(v) for v in groups.values())
    assert len(trace.of(K.ROLLOUT_GROUP)) == len(groups)
    metrics = compute_metrics(trace, warmup_steps=1)
    assert metrics["zero_adv_group_fraction"].value == pytest.approx(want)
    rollouts = trace.of(K.ROLLOUT)
    assert (rollouts["v_train"] == rollouts["step"] - 1).all()
    assert metrics["staleness_max"].value == 0  # sync mode: generated by the policy being trained


def test_worker_logs_count_tool_and_sandbox_failures_with_reasons() -> None:
    trace = ADAPTER.parse(run("v1_sync"))
    rows = trace.of("native.tool_failures")
    by_reason = rows.groupby("status", observed=True)["value"].sum().to_dict()
    assert by_reason == {"rate_limited": 2.0, "start_timeout": 1.0, "lost": 2.0}
    failures = trace.meta.extra["tool_failures"]
    assert failures["total"] == 5
    assert failures["by_tool"] == {"code_interpreter": 4, "sandbox_fusion": 1}


def test_console_only_gives_the_same_breakdown_as_the_jsonl(tmp_path: Path) -> None:
    from_jsonl = ADAPTER.parse(run("v0") / "metrics.jsonl")
    from_console = ADAPTER.parse(run("v0") / "console.log")
    for key in (K.TRAINER_STEP, *K.TRAINER_COMPONENTS):
        a, b = agg(from_jsonl, key), agg(from_console, key)
        assert a.keys() == b.keys()
        for step in a:
            assert b[step] == pytest.approx(a[step], rel=1e-12)
    assert from_console.meta.mode == "v0"


def test_resumed_run_keeps_both_segments_with_a_warning() -> None:
    trace = ADAPTER.parse(run("v1_sync-resumed"))
    steps = trace.of(K.TRAINER_STEP)
    assert sorted(steps["step"].tolist()) == [1, 2, 3, 4, 4, 5, 5, 6, 7]
    second = steps[steps["attrs"].str.contains('"segment":1')]
    assert sorted(second["step"].tolist()) == [4, 5, 6, 7]
    assert any("resumed" in w and "both segments are kept" in w for w in trace.meta.warnings)
    assert trace.meta.extra["segments"] == 2


def test_crashed_run_is_partial_and_keeps_complete_steps() -> None:
    trace = ADAPTER.parse(run("v1_sync-crashed"))
    assert trace.meta.partial
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 2, 3]
    assert any("cut off" in w for w in trace.meta.warnings)
    assert any("crash" in w for w in trace.meta.warnings)


def test_no_timing_keys_gives_what_exists_and_names_what_is_missing() -> None:
    trace = ADAPTER.parse(run("v1_sync-notiming") / "metrics.jsonl")
    assert len(trace.of(K.TRAINER_STEP)) == 0
    assert len(trace.of("quality.reward_mean")) == 3
    warning = next(w for w in trace.meta.warnings if "no verl timing keys" in w)
    assert "timing_s/step" in warning and "timing_s/gen" in warning
    metrics = compute_metrics(trace, warmup_steps=1)
    assert "trainer_idle_ratio" not in metrics


def test_recorded_version_is_used_and_unknown_version_gets_nearest_map(tmp_path: Path) -> None:
    shutil.copy(run("v1_sync") / "metrics.jsonl", tmp_path / "metrics.jsonl")
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\nverl==0.9.1\n")
    known = ADAPTER.parse(tmp_path)
    assert known.meta.framework_version == "0.9.1"
    assert known.meta.extra["keymap"] == "0.9"
    assert not any("version" in w for w in known.meta.warnings)
    (tmp_path / "requirements.txt").write_text("verl==0.12.0\n")
    unknown = ADAPTER.parse(tmp_path)
    assert unknown.meta.framework_version == "0.12.0"
    assert unknown.meta.extra["keymap"] == "0.9"
    assert any("0.12.0" in w and "nearest, 0.9" in w for w in unknown.meta.warnings)
    assert agg(unknown, K.TRAINER_STEP) == pytest.approx(agg(known, K.TRAINER_STEP))
    (tmp_path / "requirements.txt").write_text("verl==0.4.1\n")
    old = ADAPTER.parse(tmp_path)
    assert old.meta.extra["keymap"] == "0.4"


def test_other_frameworks_are_refused_with_a_reason(tmp_path: Path) -> None:
    prime = tmp_path / "metrics.jsonl"
    prime.write_text(json.dumps({"step": 3, "time/step": 12.0, "progress/total_samples": 96}) + "\n")
    with pytest.raises(NotThisFrameworkError, match=r"^not a verl log: .*metrics.jsonl.*file-logger shape"):
        ADAPTER.parse(prime)
    slime = tmp_path / "slime.log"
    slime.write_text("[2026-04-15 07:59:01] slime/ray/rollout.py:400 - perf 3: {'perf/rollout_time': 41.0}\n")
    with pytest.raises(NotThisFrameworkError, match=r"^not a verl log: .*slime.log.*mentions slime"):
        ADAPTER.parse(slime)
    empty_dir = tmp_path / "run"
    empty_dir.mkdir()
    (empty_dir / "notes.txt").write_text("nothing here\n")
    with pytest.raises(NotThisFrameworkError, match="not a verl log"):
        ADAPTER.parse(empty_dir)


def test_trace_round_trips_through_parquet(tmp_path: Path) -> None:
    from benchbed.trace import read_trace

    trace = ADAPTER.parse(run("one_step_off"))
    back = read_trace(trace.write(tmp_path / "trace.parquet"))
    assert back.meta.mode == "one_step_off"
    assert len(back.events) == len(trace.events)
    assert math.isnan(back.of(K.TRAINER_STEP)["t0"].iloc[0])


def test_pasted_v0_agent_loop_line_gives_the_breakdown(tmp_path: Path) -> None:
    """The shape of a line users paste (verl-project/verl#7412, V0 agent-loop path), prefixed as in early releases."""
    log = tmp_path / "pasted.txt"
    log.write_text(
        "(main_task pid=2211) step:12 - timing_s/agent_loop/generate_sequences/max:539.54 - "
        "timing_s/agent_loop/slowest/generate_sequences:539.54 - timing_s/agent_loop/slowest/response_length:3072 - "
        "timing_s/gen:541.19 - timing_s/old_log_prob:72.41 - timing_s/ref:72.03 - timing_s/update_actor:472.11 - "
        "timing_s/update_weights:5.83 - timing_s/step:1163.96 - timing_per_token_ms/gen:0.359\n"
        "(main_task pid=2211) step:12 - timing_s/gen:541.19 - timing_s/step:1163.96\n"
    )
    trace = ADAPTER.parse(log)
    assert trace.meta.mode == "v0"
    assert agg(trace, K.TRAINER_STEP) == {12: pytest.approx(1163.96)}
    assert agg(trace, K.TRAINER_WAIT) == {12: pytest.approx(541.19)}
    assert agg(trace, K.TRAINER_COMPUTE) == {12: pytest.approx(72.41 + 72.03 + 472.11)}
    assert agg(trace, K.TRAINER_WEIGHT_SYNC) == {12: pytest.approx(5.83)}
    assert agg(trace, K.TRAINER_OTHER) == {12: pytest.approx(1163.96 - 541.19 - 72.41 - 72.03 - 472.11 - 5.83)}
    assert any("1 repeated record" in w for w in trace.meta.warnings)


def test_old_three_decimal_console_format(tmp_path: Path) -> None:
    """Releases before numpy 2 printed %.3f values (verl-project/verl#2060)."""
    log = tmp_path / "train.log"
    log.write_text(
        "step:0 - val-aux/openai/gsm8k/reward/mean@1:0.565 - val-core/openai/gsm8k/acc/mean@1:0.508\n"
        "step:1 - actor/pg_loss:0.001 - perf/max_memory_allocated_gb:62.447 - timing_s/gen:30.500 - "
        "timing_s/old_log_prob:3.000 - timing_s/ref:2.500 - timing_s/adv:0.100 - timing_s/update_actor:12.000 - "
        "timing_s/testing:5.000 - timing_s/save_checkpoint:4.000 - timing_s/step:58.000\n"
    )
    trace = ADAPTER.parse(log)
    assert trace.meta.mode == "v0"
    assert agg(trace, K.TRAINER_CHECKPOINT) == {1: pytest.approx(4.0)}
    assert agg(trace, K.TRAINER_OTHER) == {1: pytest.approx(58.0 - 30.5 - 17.6 - 4.0)}  # testing ran inside the step


def test_fully_async_rollout_dumps_land_on_their_sync_cycle() -> None:
    trace = ADAPTER.parse(run("fully_async"))
    dumped = {int(p.stem) for p in (run("fully_async") / "rollout_data").glob("*.jsonl")}
    assert dumped == set(range(1, 9))  # dumped by local step: 4 cycles x 2 local steps
    rollouts = trace.of(K.ROLLOUT)
    assert rollouts.groupby("step").size().to_dict() == {1: 32, 2: 32, 3: 32, 4: 32}
    assert (rollouts["v_train"] == rollouts["step"] - 1).all()
    assert (rollouts["v_start"] == -1).all()  # not known from the dump in an async mode
    assert agg(trace, K.SAMPLES_TRAINED) == {1: 32.0, 2: 32.0, 3: 32.0, 4: 32.0}


def test_hydra_saved_config_gives_mode_and_sizes(tmp_path: Path) -> None:
    """benchbed's plan sets hydra.run.dir inside the run directory, so Hydra's config.yaml lands there."""
    import yaml  # PyYAML comes with the verl extra; without it the adapter skips the saved config

    shutil.copy(run("v1_sync") / "metrics.jsonl", tmp_path / "metrics.jsonl")
    (tmp_path / "hydra" / ".hydra").mkdir(parents=True)
    config = {
        "trainer": {"use_v1": True, "v1": {"trainer_mode": "colocate_async"}, "total_training_steps": 6},
        "data": {"train_batch_size": 4},
        "actor_rollout_ref": {"rollout": {"n": 4}},
    }
    (tmp_path / "hydra" / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    trace = ADAPTER.parse(tmp_path)
    assert trace.meta.mode == "v1_colocate_async"
    assert trace.meta.extra["mode_source"] == "config"
    assert trace.meta.samples_per_step == 16
    assert set(agg(trace, K.SAMPLES_TRAINED).values()) == {16.0}


def test_v1_evictions_become_sample_counters() -> None:
    """The replay buffer counts evicted prompt groups; x G they are finished samples that were not trained."""
    trace = ADAPTER.parse(run("v1_colocate_async"))
    data = jsonl_steps(run("v1_colocate_async") / "metrics.jsonl")
    group = trace.meta.group_size
    assert group == 4
    dropped = agg(trace, K.SAMPLES_DROPPED_STALE)
    trained = agg(trace, K.SAMPLES_ACCEPTED)
    finished = agg(trace, K.SAMPLES_FINISHED)
    for step, d in data.items():
        if "timing_s/step" not in d:
            continue
        assert dropped[step] == d.get("training/off_policy/evicted_samples", 0) * group
        assert finished[step] == trained[step] + dropped[step]
    assert sum(dropped.values()) > 0


def test_version_named_in_a_pasted_console(tmp_path: Path) -> None:
    log = tmp_path / "issue.txt"
    log.write_text(
        "verl version: 0.3.1\n"
        "(main_task pid=7) step:2 - timing_s/gen:10.0 - timing_s/update_actor:5.0 - timing_s/step:16.0\n"
    )
    trace = ADAPTER.parse(log)
    assert trace.meta.framework_version == "0.3.1"
    assert trace.meta.extra["keymap"] == "0.4"
    assert any("0.3.1" in w and "nearest, 0.4" in w for w in trace.meta.warnings)
    assert agg(trace, K.TRAINER_OTHER) == {2: pytest.approx(1.0)}
