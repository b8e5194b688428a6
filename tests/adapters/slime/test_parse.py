"""End-to-end parse of slime runs (fixtures under tests/fixtures/slime, made by make_fixtures.py) and the metrics."""

from __future__ import annotations

import builtins
import json
import shutil
import time
from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter

from benchbed import keys as K
from benchbed.adapter import get_adapter
from benchbed.errors import AdapterError, NotThisFrameworkError
from benchbed.metrics import compute_metrics
from benchbed.quality import key_of

FIX = Path(__file__).parents[2] / "fixtures" / "slime"


def parse(name: str):
    return SlimeAdapter().parse(FIX / name)


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.events[(trace.events["key"] == key) & (trace.events["kind"] == "agg")]
    return dict(zip(rows["step"], rows["value"], strict=True))


def span_seconds(trace, key: str) -> dict[int, float]:
    rows = trace.events[(trace.events["key"] == key) & (trace.events["kind"] == "span")]
    return (rows["t1"] - rows["t0"]).groupby(rows["step"]).sum().to_dict()


def value(metrics, name: str) -> float:
    return metrics[name].value


def test_entry_point_is_registered() -> None:
    assert isinstance(get_adapter("slime"), SlimeAdapter)


def test_sync_colocated_run_decomposes_each_step_by_the_key_map() -> None:
    trace = parse("sync_colocated_624b824")
    assert (trace.meta.framework_version, trace.meta.mode) == ("624b824", "sync")
    assert trace.meta.extra["placement"] == "colocated"
    assert (trace.meta.samples_per_step, trace.meta.group_size) == (32, 8)
    # step 1 (rollout 0): train_wait 100 = update_weights 3 + wake_up 2 + data_preprocess 0.5 + wait 94.5
    assert span_seconds(trace, K.TRAINER_STEP) == {1: 120.0, 2: 80.0, 3: 80.0, 4: 86.0}
    assert span_seconds(trace, K.TRAINER_WAIT) == {1: 94.5, 2: 51.5, 3: 51.5, 4: 51.5}
    assert span_seconds(trace, K.TRAINER_COMPUTE) == {1: 19.0, 2: 19.0, 3: 19.0, 4: 19.0}
    assert span_seconds(trace, K.TRAINER_WEIGHT_SYNC) == {1: 3.0, 2: 2.0, 3: 2.0, 4: 2.0}
    assert span_seconds(trace, K.TRAINER_CHECKPOINT) == {4: 6.0}
    # other = sleep 4 + wake_up 2 + data_preprocess 0.5 + (train 20 - compute 19)
    assert span_seconds(trace, K.TRAINER_OTHER) == {1: 3.5, 2: 7.5, 3: 7.5, 4: 7.5}
    steps = trace.events[trace.events["key"] == K.TRAINER_STEP].sort_values("step")
    assert steps["t0"].tolist() == [5.0, 125.0, 205.0, 285.0]  # contiguous, starting at `Timer train_wait start`
    assert agg(trace, K.GROUPS_ZERO_ADV) == {1: 1.0, 2: 1.0, 3: 2.0, 4: 0.0}
    assert agg(trace, K.SAMPLES_TRAINED) == {1: 32.0, 2: 32.0, 3: 32.0, 4: 32.0}
    assert agg(trace, "native.train/grad_norm") == {1: 0.21, 3: 0.21, 4: 0.21}  # nan at step 2 is not kept
    assert any(w.endswith("run.log:33: skipped `perf 9:` line: not a Python dict: unterminated string literal "
                          "(detected at line 1) at column 28") for w in trace.meta.warnings)  # fmt: skip


def test_sync_metrics_follow_the_definitions_and_keep_slimes_own_ratio() -> None:
    metrics = compute_metrics(parse("sync_colocated_624b824"), warmup_steps=1)
    assert value(metrics, "trainer_idle_ratio") == pytest.approx(154.5 / 246)
    assert value(metrics, "trainer_checkpoint_ratio") == pytest.approx(6 / 246)
    assert value(metrics, "step_time_mean_s") == pytest.approx(82.0)
    assert value(metrics, "startup_s") == pytest.approx(5.0)
    assert value(metrics, "zero_adv_group_fraction") == pytest.approx(3 / 12)
    assert value(metrics, "framework_trainer_idle_ratio") == pytest.approx((0.75 + 0.75 + 66 / 86) / 3)


def test_tensorboard_only_gives_the_same_steps_as_the_console() -> None:
    console, tb = parse("sync_colocated_624b824"), parse("tb_only_sync")
    for key in K.TRAINER_COMPONENTS + (K.TRAINER_STEP,):
        assert span_seconds(tb, key) == pytest.approx(span_seconds(console, key))
    assert agg(tb, K.GROUPS_ZERO_ADV) == agg(console, K.GROUPS_ZERO_ADV)
    assert tb.meta.mode == "sync" and tb.meta.extra["placement"] == "colocated"
    assert any("rollout_batch_size / n_samples_per_prompt unknown" in w for w in tb.meta.warnings)
    assert len(tb.meta.sources) == 2 and all("events.out.tfevents" in s for s in tb.meta.sources)


def test_async_v031_run_is_detected_and_joined_on_rollout_id() -> None:
    trace = parse("async_v031")
    assert trace.meta.framework_version == "v0.3.1"
    assert trace.meta.mode == "one_step_off"
    assert trace.meta.extra["placement"] == "disaggregated"
    assert span_seconds(trace, K.TRAINER_WAIT) == {1: 28.0, 2: 8.0, 3: 8.0, 4: 8.0, 5: 8.0}
    # rollout k+1 is printed during trainer step k, yet its counters belong to step k+2 (join on id, not time)
    assert agg(trace, "native.perf/rollout_time") == {1: 29.0, 2: 45.0, 3: 45.0, 4: 45.0, 5: 45.0, 6: 45.0}
    assert agg(trace, K.GROUPS_ZERO_ADV) == {s: 3.0 for s in range(1, 7)}  # 3 groups dropped for zero std
    metrics = compute_metrics(trace, warmup_steps=1)
    assert value(metrics, "trainer_idle_ratio") == pytest.approx(32 / 152)
    assert value(metrics, "framework_trainer_idle_ratio") == pytest.approx(10 / 38)


def test_fully_async_run_with_dumps_versions_partial_rollouts_and_failures() -> None:
    trace = parse("fully_async_swe")
    assert (trace.meta.mode, trace.meta.framework_version) == ("fully_async", "624b824")
    assert trace.meta.extra["update_weights_interval"] == 2 and trace.meta.extra["partial_rollout"] is True
    assert trace.meta.concurrency == 64 * 2
    r = trace.events[trace.events["key"] == K.ROLLOUT]
    assert len(r) == 24 and set(r["kind"]) == {"span"}
    last = r[r["v_train"] == 2]
    # weight_versions ["1", "2"] with a push every 2 steps: slime v1 -> benchbed 0, slime v2 -> benchbed 2
    assert set(last["v_start"]) == {0} and set(last["v_end"]) == {2} and set(last["step"]) == {3}
    resumed = [json.loads(a) for a in r["attrs"] if "resumed_from_rollout" in a]
    assert resumed == [{"reward": 1.0, "slime_status": "completed", "response_length": 2, "resumed_from_rollout": 0,
                        "env_staleness": 2, "non_generation_time_s": 2.5}]  # fmt: skip
    assert agg(trace, "native.partial_rollout/env_staleness_mean") == {3: 2.0}
    assert agg(trace, "native.fully_async/queue_left") == {1: 1.0, 2: 1.0, 3: 1.0}  # `done in 5.0s, queue_left=1`
    aborted = r[r["status"] == "aborted"]
    assert len(aborted) == 1 and json.loads(aborted["attrs"].iloc[0])["abort_reason"] == "missing_image_or_workdir"
    groups = trace.events[trace.events["key"] == K.ROLLOUT_GROUP]
    assert len(groups) == 6 and sorted(groups["value"].round(3)) == [0.0, 0.0, 0.0, 0.5, 0.5, 0.5]
    starts = trace.events[trace.events["key"] == K.SANDBOX_START]
    # 3 failed provision attempts; aborts: missing image, wall-clock timeout (the abort after the exhausted
    # astropy attempts is the same failure, counted once); 3 finished agent runs
    assert sorted(starts["status"]) == sorted(
        ["rate_limited", "start_timeout", "start_timeout", "image_error", "lifetime_timeout", "ok", "ok", "ok"]
    )
    assert len(trace.events[trace.events["key"] == K.SANDBOX_EXEC]) == 24
    metrics = compute_metrics(trace, warmup_steps=1)
    assert value(metrics, "sandbox_init_failure_rate") == pytest.approx(5 / 8)
    assert value(metrics, "staleness_max") == 2
    assert value(metrics, "zero_adv_group_fraction") == pytest.approx(0.5)


def test_secrets_in_log_lines_never_reach_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("E2B_API_KEY", "sk-SECRETSECRET")
    trace = parse("fully_async_swe")
    assert not trace.events["attrs"].str.contains("SECRETSECRET").any()
    assert trace.events["attrs"].str.contains(r"\*\*\*").any()


def test_real_trainer_line_agrees_with_wait_time_ratio_where_definitions_coincide(tmp_path: Path) -> None:
    # PR #1102 (colocated, offload): slime counts offload + weight sync as waiting; benchbed splits them out.
    pr1102 = (
        "(MegatronTrainRayActor pid=38610) [2026-01-05 12:20:29] train_metric_utils.py:44 - perf 2: "
        "{'perf/sleep_time': 4.04, 'perf/update_weights_time': 0.34, 'perf/wake_up_time': 1.94, "
        "'perf/data_preprocess_time': 0.002, 'perf/train_wait_time': 11.33, 'perf/ref_log_probs_time': 1.40, "
        "'perf/log_probs_time': 0.11, 'perf/cp_seq_kl_prep_time': 0.0009074211120605469, "
        "'perf/actor_train_time': 1.02, 'perf/train_time': 2.84, "
        "'perf/log_probs_tflops': 11.65, 'perf/ref_log_probs_tflops': 0.90, 'perf/actor_train_tflops': 3.72, "
        "'perf/actor_train_tok_per_s': 2355.6, 'perf/step_time': 14.18, 'perf/wait_time_ratio': 0.799}"
    )
    # The same trainer with nothing running outside the train block: the two definitions coincide.
    bare = (
        "(MegatronTrainRayActor pid=1) [2026-01-05 12:21:29] train_metric_utils.py:401 - perf 3: "
        "{'perf/train_wait_time': 6.0, 'perf/actor_train_time': 2.0, 'perf/train_time': 2.0, "
        "'perf/step_time': 8.0, 'perf/wait_time_ratio': 0.75}"
    )
    (tmp_path / "run.log").write_text(pr1102 + "\n" + bare + "\n")
    trace = SlimeAdapter().parse(tmp_path / "run.log")
    waits, steps = span_seconds(trace, K.TRAINER_WAIT), span_seconds(trace, K.TRAINER_STEP)
    assert waits[4] / steps[4] == pytest.approx(agg(trace, "framework.trainer_idle_ratio")[4]) == 0.75
    outside = 4.04 + 0.34 + 1.94 + 0.002
    assert waits[3] == pytest.approx(11.33 - outside)
    assert (waits[3] + outside) / steps[3] == pytest.approx(0.799, abs=1e-3)
    assert trace.meta.extra["unmapped_timers"] == ["cp_seq_kl_prep"]  # a timer newer than the key map: reported


def test_other_framework_output_is_refused_with_a_reason() -> None:
    with pytest.raises(NotThisFrameworkError, match=r"^not a slime run: .*look like verl"):
        SlimeAdapter().parse(FIX / "other_verl")
    with pytest.raises(NotThisFrameworkError, match=r"^not a slime run: .*not a slime rollout dump"):
        SlimeAdapter().parse(FIX / "foreign_pt")


def test_dump_from_incompatible_version_names_the_missing_fields() -> None:
    with pytest.raises(AdapterError, match=r"incompatible slime version: samples lack field\(s\) \['metadata', "
                                           r"'weight_versions'\]"):  # fmt: skip
        SlimeAdapter().parse(FIX / "bad_dump_version")


def _without(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Imports of `module` fail, as when the `local` extra is not installed."""
    real_import = builtins.__import__

    def guarded(name: str, *args, **kwargs):
        if name == module or name.startswith(f"{module}."):
            raise ImportError(f"No module named {module!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guarded)


def test_without_torch_dumps_are_reported_and_the_rest_is_ingested(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shutil.copytree(FIX / "fully_async_swe", tmp_path / "run")
    _without(monkeypatch, "torch")
    trace = SlimeAdapter().parse(tmp_path / "run")
    assert any("3 rollout dump(s) found but not read" in w and "benchbed[local]" in w for w in trace.meta.warnings)
    assert len(trace.events[trace.events["key"] == K.ROLLOUT]) == 0
    assert len(trace.events[trace.events["key"] == K.TRAINER_STEP]) == 3
    with pytest.raises(AdapterError, match=r"benchbed\[local\]"):
        SlimeAdapter().parse(tmp_path / "run" / "rollout_dumps")


def test_without_tensorboard_a_tensorboard_only_run_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "tensorboard")
    with pytest.raises(AdapterError, match=r"^2 TensorBoard event file\(s\) found but not read: .*\[tensorboard\]"):
        parse("tb_only_sync")


def test_empty_or_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(NotThisFrameworkError, match="^not a slime run: .* holds no console log"):
        SlimeAdapter().parse(tmp_path)
    with pytest.raises(AdapterError, match="no such file"):
        SlimeAdapter().parse(tmp_path / "nope")


def test_single_files_are_accepted(tmp_path: Path) -> None:
    trace = SlimeAdapter().parse(FIX / "fully_async_swe" / "rollout_dumps" / "rollout_2.pt")
    assert len(trace.events[trace.events["key"] == K.ROLLOUT]) == 8
    event_file = next((FIX / "tb_only_sync" / "tensorboard").glob("*.trainer"))
    assert len(SlimeAdapter().parse(event_file).of(K.TRAINER_STEP)) == 4


def test_generator_pauses_follow_the_loop() -> None:
    sync = parse("sync_colocated_624b824")
    # train.py: the generator only works while the trainer waits; everything else in a step is a pause
    paused = span_seconds(sync, K.GENERATOR_PAUSED)
    assert paused == pytest.approx({1: 25.5, 2: 28.5, 3: 28.5, 4: 34.5})
    metrics = compute_metrics(sync, warmup_steps=1)
    assert value(metrics, "generator_paused_ratio") == pytest.approx((28.5 + 28.5 + 34.5) / 246)
    one_off = parse("async_v031")
    # train_async.py: weight update (1.5 s) plus the gap from rollout k+1 done (20 s before step k ends) to step end
    assert span_seconds(one_off, K.GENERATOR_PAUSED) == pytest.approx({s: 21.5 for s in range(1, 6)})


def test_truncated_and_failed_runs_are_partial(tmp_path: Path) -> None:
    log = (FIX / "sync_colocated_624b824" / "run.log").read_text().splitlines()
    cut = log + ["(MegatronTrainRayActor pid=38610) [2026-04-15 07:56:40] timer.py:24 - Timer train start"]
    (tmp_path / "cut.log").write_text("\n".join(cut) + "\n")
    trace = SlimeAdapter().parse(tmp_path / "cut.log")
    assert trace.meta.partial and any("train block started after the last logged step" in w for w in
                                      trace.meta.warnings)  # fmt: skip
    (tmp_path / "failed.log").write_text("\n".join(log + ["Job 'raysubmit_abc' failed"]) + "\n")
    assert SlimeAdapter().parse(tmp_path / "failed.log").meta.partial
    assert not parse("sync_colocated_624b824").meta.partial


def test_the_training_reward_and_eval_scores_are_quality_rows() -> None:
    trace = parse("sync_colocated_624b824")
    # the trainer's `rollout N:` dict: rollout/raw_reward 0.5 + 0.1 N, trained by benchbed's step N + 1
    assert agg(trace, K.QUALITY_REWARD) == pytest.approx({1: 0.5, 2: 0.6, 3: 0.7, 4: 0.8})
    assert agg(trace, "native.trainer/rollout/raw_reward") == {}
    # `eval 1:` (after rollout 1 is trained): each eval figure under quality.eval.<its name>
    assert agg(trace, "quality.eval.aime") == {2: 0.3125}
    assert key_of("eval/aime") == "quality.eval.aime"  # what `--target "eval/aime>=0.3"` judges
    assert agg(trace, "quality.eval.aime-truncated_ratio") == {2: 0.25}
    metrics = compute_metrics(trace, warmup_steps=1)
    assert value(metrics, "final_reward_mean") == pytest.approx(0.8)  # the last quarter of 4 steps: step 4
    assert value(metrics, "reward_gain") == pytest.approx(0.3)


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", "America/New_York"])
def test_dump_times_are_aligned_with_the_console_clock(monkeypatch: pytest.MonkeyPatch, tz: str) -> None:
    # Console times are naive local time; dump trace times are epoch seconds. Whatever the ingesting machine's
    # zone, rollout k's samples must end just before slime logged `perf k` (T0 + 15 + 50k in the fixture).
    monkeypatch.setenv("TZ", tz)
    time.tzset()
    try:
        trace = parse("fully_async_swe")
    finally:
        monkeypatch.undo()
        time.tzset()
    r = trace.events[trace.events["key"] == K.ROLLOUT]
    ends = r.groupby("v_train")["t1"].max().to_dict()
    assert ends == pytest.approx({0: 13.5, 1: 63.5, 2: 113.5})  # origin = first console line at T0 + 1


def test_steps_are_rebuilt_from_timer_lines_when_perf_lines_are_missing(tmp_path: Path) -> None:
    def timer(t: int, name: str, elapsed: float | None = None, pid: int = 7) -> str:
        what = "start" if elapsed is None else f"end (elapsed: {elapsed:.1f}s)"
        stamp = f"2026-01-05 12:{t // 60:02d}:{t % 60:02d}"
        return f"(MegatronTrainRayActor pid={pid}) [{stamp}] timer.py:32 - Timer {name} {what}"

    lines = [timer(0, "train_wait")]
    t = 0
    for k, (wait, sleep) in enumerate([(100.0, 0.0), (60.0, 4.0)]):
        if sleep:
            lines.append(timer(t + 4, "sleep", sleep))
        lines += [timer(t + 7, "update_weights", 3.0), timer(t + 9, "wake_up", 2.0)]
        lines += [timer(t + int(wait), "train_wait", wait), timer(t + int(wait), "train")]
        lines += [timer(t + int(wait) + 5, "log_probs", 5.0), timer(t + int(wait) + 19, "actor_train", 14.0)]
        t += int(wait) + 20
        lines += [timer(t, "train", 20.0), timer(t, "ref_model_update", 0.0 if k else 1.0), timer(t, "train_wait")]
        lines.append(timer(t, "train", 9.9, pid=8))  # a second process's timers are not mixed in
    (tmp_path / "timers.log").write_text("\n".join(lines) + "\n")
    trace = SlimeAdapter().parse(tmp_path / "timers.log")
    assert any("steps rebuilt from `Timer ... end` lines" in w for w in trace.meta.warnings)
    assert span_seconds(trace, K.TRAINER_STEP) == {1: 120.0, 2: 80.0}
    assert span_seconds(trace, K.TRAINER_COMPUTE) == {1: 19.0, 2: 19.0}
    # step 2's wait: 60 - sleep 4 - update_weights 3 - wake_up 2 - ref_model_update 1 (logged with step 1)
    assert span_seconds(trace, K.TRAINER_WAIT) == {1: 95.0, 2: 50.0}


def test_a_benchbed_run_directory_uses_the_launch_manifest(tmp_path: Path) -> None:
    from benchbed.launch.local import write_plan_files
    from benchbed.spec import build_spec

    workload = {"model": "Qwen/Qwen3-30B-A3B", "prompts_per_step": 4, "group_size": 8, "steps": 4}
    spec = build_spec({"name": "t", "adapter": "slime", "workload": workload, "resources": {"colocated": True}})
    run = tmp_path / "run"
    write_plan_files(SlimeAdapter().render(spec, run), run)
    shutil.copytree(FIX / "tb_only_sync" / "tensorboard", run / "tensorboard")
    trace = SlimeAdapter().parse(run)
    assert (trace.meta.mode, trace.meta.extra["placement"], trace.meta.extra["train_script"]) == (
        "sync", "colocated", "train.py")  # fmt: skip
    assert (trace.meta.samples_per_step, trace.meta.group_size) == (32, 8)
    assert agg(trace, K.GROUPS_FINISHED) == {1: 4.0, 2: 4.0, 3: 4.0, 4: 4.0}
    assert agg(trace, K.SAMPLES_TRAINED) == {1: 32.0, 2: 32.0, 3: 32.0, 4: 32.0}
    assert not trace.meta.partial  # 4 of --num-rollout 4 steps


def test_another_frameworks_tensorboard_events_are_refused(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))  # verl-style tags
    for step in range(1, 4):
        writer.add_scalar("timing_s/gen", 12.5, step)
        writer.add_scalar("actor/pg_loss", 0.1, step)
    writer.close()
    with pytest.raises(NotThisFrameworkError, match=r"^not a slime run: 1 TensorBoard event file\(s\) carry no slime"):
        SlimeAdapter().parse(tmp_path)


def test_dumps_alone_give_sandbox_starts_from_traces_and_abort_reasons(tmp_path: Path) -> None:
    shutil.copytree(FIX / "fully_async_swe" / "rollout_dumps", tmp_path / "dumps")
    trace = SlimeAdapter().parse(tmp_path / "dumps")
    starts = trace.events[trace.events["key"] == K.SANDBOX_START]
    # every sample traced a boot_agent_sandbox span (ok); start latencies come from those spans
    assert len(starts) == 24 and set(starts["kind"]) == {"span"} and set(starts["status"]) == {"ok"}
    metrics = compute_metrics(trace, warmup_steps=0)
    assert value(metrics, "sandbox_start_p50_s") == pytest.approx(3.75)  # 3 + 0.5 j over j = 0..3
    assert value(metrics, "sandbox_start_max_s") == pytest.approx(4.5)


def test_agentic_dumps_without_traces_count_one_start_per_sample(tmp_path: Path) -> None:
    import torch

    for path in sorted((FIX / "fully_async_swe" / "rollout_dumps").glob("rollout_*.pt")):
        payload = torch.load(path, weights_only=True)
        for sample in payload["samples"]:
            sample.pop("trace")
        torch.save(payload, tmp_path / path.name)
    trace = SlimeAdapter().parse(tmp_path)
    starts = trace.events[trace.events["key"] == K.SANDBOX_START]
    assert len(starts) == 24 and sorted(starts["status"]).count("ok") == 23
    assert json.loads(starts[starts["status"] == "image_error"]["attrs"].iloc[0]) == {
        "abort_reason": "missing_image_or_workdir"
    }
    r = trace.events[trace.events["key"] == K.ROLLOUT]
    assert set(r["kind"]) == {"point"} and r["t0"].isna().all()  # no trace, no times


def test_partial_samples_buffered_per_rollout(tmp_path: Path) -> None:
    lines = (FIX / "sync_colocated_624b824" / "run.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "rollout_metrics.py:268 - perf 1:" in line)
    collected = "(RolloutManager pid=1805485) [2026-04-15 07:52:00] sglang_rollout.py:369 - Collected {} partial " \
                "samples into the data buffer"  # fmt: skip
    lines[at:at] = [collected.format(5), collected.format(2)]
    (tmp_path / "run.log").write_text("\n".join(lines) + "\n")
    assert agg(SlimeAdapter().parse(tmp_path / "run.log"), "native.partial_rollout/buffered") == {2: 7.0}


def test_version_of_a_line_between_the_pins_is_its_code_layout(tmp_path: Path) -> None:
    # slime issue #1837 (2026-04-15): the RolloutManager's perf call at rollout.py:1193, before the #2298 move
    line = ("(RolloutManager pid=1805485) [2026-04-15 07:57:53] rollout.py:1193 - perf 0: {'rollout/zero_std/count_0': "
            "12, 'rollout/zero_std/count_1': 14, 'perf/rollout_time': 371.1796889305115}")  # fmt: skip
    (tmp_path / "issue.log").write_text(line + "\n")
    trace = SlimeAdapter().parse(tmp_path / "issue.log")
    assert trace.meta.framework_version == "slime/utils layout (<= v0.3.1-era)"
    assert agg(trace, K.GROUPS_ZERO_ADV) == {1: 26.0}
    assert agg(trace, "native.perf/rollout_time") == {1: pytest.approx(371.1796889305115)}


def test_tensorboard_steps_on_the_train_step_axis_map_back_to_rollouts(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    block = ["------------------------ arguments ------------------------"]
    block += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in (("global_batch_size", 16), ("n_samples_per_prompt", 8),
              ("rollout_batch_size", 4), ("wandb_always_use_train_step", True))]  # fmt: skip
    block.append("-------------------- end of arguments ---------------------")
    (tmp_path / "driver.log").write_text("\n".join(block) + "\n")
    writer = SummaryWriter(str(tmp_path / "tb"))
    for rid in range(3):  # 32 samples per rollout / global batch 16 = 2 train steps per rollout
        for key, value in {"perf/train_wait_time": 6.0, "perf/train_time": 2.0, "perf/actor_train_time": 2.0}.items():
            writer.add_scalar(key, value, 2 * rid, walltime=1000.0 + 8 * rid)
    writer.close()
    trace = SlimeAdapter().parse(tmp_path)
    assert span_seconds(trace, K.TRAINER_STEP) == {1: 8.0, 2: 8.0, 3: 8.0}


def test_resumed_partial_rollout_waits_in_the_buffer_between_its_generate_calls(tmp_path: Path) -> None:
    """Sample 16 of rollout 2 was started in rollout 0 (start_rollout_id 0); with its first `generate_and_rm` span
    kept in its trace, [end of that span, start of the next] is rollout.buffered: it held no generator slot."""
    import torch

    run = tmp_path / "run"
    shutil.copytree(FIX / "fully_async_swe", run)
    dump_path = run / "rollout_dumps" / "rollout_2.pt"
    dump = torch.load(dump_path, weights_only=False)
    (resumed,) = [s for s in dump["samples"] if s["metadata"].get("start_rollout_id") == 0]
    events = resumed["trace"]["events"]
    (first,) = [e for e in events if e["name"] == "generate_and_rm" and e["type"] == "span_start"]
    base = first["ts"]
    events += [{"type": "span_start", "name": "generate_and_rm", "ts": base - 70.0, "span_id": "seg0"},
               {"type": "span_end", "name": "generate_and_rm", "ts": base - 50.0, "span_id": "seg0"}]  # fmt: skip
    torch.save(dump, dump_path)
    after = SlimeAdapter().parse(run)
    (row,) = after.of(K.ROLLOUT_BUFFERED).itertuples()  # the only sample with two generate_and_rm calls
    (sample,) = after.of(K.ROLLOUT)[lambda r: r["sample"] == row.sample].itertuples()
    assert (row.t0 - sample.t0, row.t1 - sample.t0) == pytest.approx((20.0, 70.0))


# APRIL's trainer prints one `partial_rollout N:` dict a rollout (log_partial_rollout_data in
# slime/backends/megatron_utils/data.py at RLsys-Foundation/APRIL@a72b585), with `print`: no logger header.
APRIL_ROUNDS = [(1000, 0), (800, 200), (600, 400), (1800, 200)]  # (total_tokens, total_off_policy_tokens)


def test_aprils_partial_rollout_tokens_give_the_off_policy_share(tmp_path: Path) -> None:
    log = (FIX / "sync_colocated_624b824" / "run.log").read_text().splitlines()
    for rid, (total, off) in enumerate(APRIL_ROUNDS):
        figures = {"partial_rollout/tokens_mean": total / 32, "partial_rollout/total_tokens": total,
                   "partial_rollout/partial_samples": 3, "partial_rollout/total_off_policy_tokens": off,
                   "partial_rollout/off_policy_ratio": off / (total + off)}  # fmt: skip
        at = next(i for i, line in enumerate(log) if f"- rollout {rid}: " in line)
        log.insert(at + 1, f"(MegatronTrainRayActor pid=38610) partial_rollout {rid}: {figures}")
    (tmp_path / "april.log").write_text("\n".join(log) + "\n")
    trace = SlimeAdapter().parse(tmp_path / "april.log")
    # rollout N is trained by benchbed's step N + 1
    assert agg(trace, K.SAMPLES_DECODED_TOKENS) == {1: 1000, 2: 800, 3: 600, 4: 1800}
    assert agg(trace, K.SAMPLES_OFF_POLICY_TOKENS) == {1: 0, 2: 200, 3: 400, 4: 200}
    assert agg(trace, "native.partial_rollout/partial_samples") == {1: 3, 2: 3, 3: 3, 4: 3}
    assert agg(trace, "native.partial_rollout/total_tokens") == {}
    metrics = compute_metrics(trace, warmup_steps=1)
    # steps 2-4: (200 + 400 + 200) / (800 + 600 + 1800 + 800) by tokens; APRIL's own, the mean of its ratios
    assert value(metrics, "off_policy_token_share") == pytest.approx(800 / 4000)
    assert value(metrics, "framework_off_policy_token_share") == pytest.approx((0.2 + 0.4 + 0.1) / 3)
    assert "off_policy_token_share" not in compute_metrics(parse("sync_colocated_624b824"), warmup_steps=1)


def test_a_damaged_partial_rollout_figure_is_left_out_with_a_warning_naming_its_line(tmp_path: Path) -> None:
    log = (FIX / "sync_colocated_624b824" / "run.log").read_text().splitlines()
    at = next(i for i, line in enumerate(log) if "- rollout 2: " in line)
    figures = {"partial_rollout/total_tokens": 600, "partial_rollout/total_off_policy_tokens": -400}
    log.insert(at + 1, f"(MegatronTrainRayActor pid=38610) partial_rollout 2: {figures}")
    (tmp_path / "april.log").write_text("\n".join(log) + "\n")
    trace = SlimeAdapter().parse(tmp_path / "april.log")
    assert agg(trace, K.SAMPLES_DECODED_TOKENS) == {3: 600}
    assert agg(trace, K.SAMPLES_OFF_POLICY_TOKENS) == {}
    assert f"{tmp_path / 'april.log'}:{at + 2}: partial_rollout/total_off_policy_tokens = -400.0 is not a count of " \
           "tokens or a share; left out" in trace.meta.warnings  # fmt: skip
