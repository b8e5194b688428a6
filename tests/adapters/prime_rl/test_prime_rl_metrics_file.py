"""metrics.jsonl: trainer and orchestrator rows told apart, per-step components, bad lines, other frameworks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter

from benchbed import keys as K
from benchbed.errors import NotThisFrameworkError
from benchbed.metrics import compute_metrics


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.of(key)
    rows = rows[rows["kind"] == "agg"]
    return dict(zip(rows["step"].astype(int), rows["value"].astype(float), strict=True))


@pytest.fixture(scope="module")
def head(fixtures: Path):
    return PrimeRLAdapter().parse(fixtures / "head-559b447" / "metrics.jsonl")


def test_rows_interleave_as_prime_rl_writes_them(fixtures: Path) -> None:
    """The fixture itself: batch k is shipped (orchestrator row) before trainer step k logs its five rows."""
    rows = [json.loads(line) for line in (fixtures / "head-559b447" / "metrics.jsonl").read_text().splitlines()]
    order = [("orch" if "time/wait_for_policy" in r else "trainer", r["step"]) for r in rows]
    for k in range(2, 7):
        assert order.index(("trainer", k - 1)) < order.index(("orch", k)) < order.index(("trainer", k))
    assert [r["time"] for r in rows] == sorted(r["time"] for r in rows)
    assert sum(1 for who, _ in order if who == "trainer") == 5 * 6
    assert all("time/step" in r for r in rows if "time/wait_for_policy" in r or "time/wait_for_batch" in r)


def test_trainer_step_is_the_trainer_time_step_not_the_orchestrators(head, gen) -> None:
    steps = agg(head, K.TRAINER_STEP)
    assert steps == {k + 1: pytest.approx(gen.step_time(t)) for k, t in enumerate(gen.HEAD_TIMERS)}
    orch_steps = agg(head, "native.orchestrator.time/step")
    assert orch_steps[3] != pytest.approx(steps[3])


def test_components_map_and_sum_to_the_step(head, gen) -> None:
    wait, compute = agg(head, K.TRAINER_WAIT), agg(head, K.TRAINER_COMPUTE)
    sync, ckpt, other = agg(head, K.TRAINER_WEIGHT_SYNC), agg(head, K.TRAINER_CHECKPOINT), agg(head, K.TRAINER_OTHER)
    for k, (w, load, fb, bw, ck) in enumerate(gen.HEAD_TIMERS, start=1):
        assert (wait[k], compute[k], sync[k], ckpt[k]) == pytest.approx((w, fb, bw, ck))
        assert other[k] == pytest.approx(load + gen.LOOP_OVERHEAD)
        assert wait[k] + compute[k] + sync[k] + ckpt[k] + other[k] == pytest.approx(
            gen.step_time(gen.HEAD_TIMERS[k - 1])
        )


def test_trainer_idle_ratio_skips_step_one(head, gen) -> None:
    timers = gen.HEAD_TIMERS[1:]
    expected = sum(t[0] for t in timers) / sum(gen.step_time(t) for t in timers)
    metrics = compute_metrics(head, warmup_steps=1)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(expected)
    assert metrics["trainer_idle_ratio"].source == "agg"


def test_orchestrator_rows_give_pause_and_staleness(head, gen, fixtures: Path) -> None:
    assert agg(head, K.GENERATOR_PAUSED) == {k + 1: v for k, v in enumerate(gen.WAIT_FOR_POLICY)}
    rows = [json.loads(line) for line in (fixtures / "head-559b447" / "metrics.jsonl").read_text().splitlines()]
    orch = {r["step"]: r for r in rows if "off_policy/mean" in r}
    assert agg(head, "framework.staleness_mean") == {k: r["off_policy/mean"] for k, r in orch.items()}
    assert agg(head, "framework.staleness_max") == {k: r["off_policy/max"] for k, r in orch.items()}
    assert agg(head, "framework.staleness_in_queue_mean") == {k: r["off_policy/in_queue/mean"] for k, r in orch.items()}
    assert agg(head, "native.orchestrator.off_policy/in_flight/max") == {
        k: r["off_policy/in_flight/max"] for k, r in orch.items()
    }
    assert agg(head, K.SAMPLES_DROPPED_STALE) == {k: r["off_policy/dropped"] for k, r in orch.items()}
    assert agg(head, K.SAMPLES_FINISHED) == {k: r["progress/rollouts"] for k, r in orch.items()}


def test_the_shipped_episodes_reward_and_eval_scores_are_quality_rows(head, fixtures: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (fixtures / "head-559b447" / "metrics.jsonl").read_text().splitlines()]
    shipped = {r["step"]: r["train/agg/effective/agent/reward/mean"] for r in rows if "off_policy/mean" in r}
    assert agg(head, K.QUALITY_REWARD) == pytest.approx(shipped)  # subset 'effective': the batch trained
    assert agg(head, K.QUALITY_REWARD) != pytest.approx({r["step"]: r["train/agg/all/agent/reward/mean"]
                                                         for r in rows if "off_policy/mean" in r})  # fmt: skip
    assert agg(head, "native.orchestrator.train/agg/effective/agent/reward/mean") == {}
    # an evaluation row as orchestrator.py logs it at 559b447: per environment, subset and agent, avg@k
    evaluation = {"eval/gsm8k/all/agent/avg@4": 0.25, "eval/gsm8k/effective/agent/avg@4": 0.375,
                  "eval/gsm8k/policy_version": 3.0, "step": 4, "time": rows[-1]["time"] + 1}  # fmt: skip
    copy = tmp_path / "metrics.jsonl"
    copy.write_text((fixtures / "head-559b447" / "metrics.jsonl").read_text() + json.dumps(evaluation) + "\n")
    trace = PrimeRLAdapter().parse(copy)
    assert agg(trace, "quality.eval.gsm8k.effective.agent.avg_at_4") == {4: 0.375}
    assert not [key for key in trace.events["key"].unique() if "policy_version" in key]  # not a score


def test_a_v050_rows_reward_and_eval_are_quality_rows(tmp_path: Path) -> None:
    """orchestrator.py and eval_utils.py at 63331ad (v0.5.0) name them reward/all/mean and eval/ENV/avg@k."""
    from benchbed.adapters.prime_rl.keymap import quality_of

    assert quality_of("reward/all/mean") == K.QUALITY_REWARD
    assert quality_of("reward/gsm8k/mean") is None  # one environment's: not the step's reward
    assert quality_of("eval/gsm8k/avg@8") == "quality.eval.gsm8k.avg_at_8"
    assert quality_of("eval/gsm8k/completion_len/mean") is None


def test_era_and_meta(head) -> None:
    assert head.meta.framework == "prime-rl"
    assert head.meta.extra["era"] == "head"
    assert head.meta.framework_version.startswith("v0.8.1.dev")
    assert head.meta.samples_per_step == 8 and head.meta.group_size == 4
    assert head.meta.extra["max_off_policy_steps"] == 2
    assert head.meta.concurrency is None and head.meta.extra["max_inflight"] == 32  # adaptive cap, not slots
    assert not head.meta.partial


def test_v080_metrics_without_off_policy_keys(fixtures: Path, gen) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "v0.8.0-60bc295")
    assert trace.meta.extra["era"] == "v0.6-v0.8.0"
    assert not len(trace.of("framework.staleness_mean"))
    timers = gen.V080_TIMERS[1:]
    expected = sum(t[0] for t in timers) / sum(gen.step_time(t) for t in timers)
    assert compute_metrics(trace)["trainer_idle_ratio"].value == pytest.approx(expected)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_non_finite_row_is_skipped_with_its_line(run_copy) -> None:
    run = run_copy("head-559b447")
    lines = _lines(run / "metrics.jsonl")
    idx = next(i for i, line in enumerate(lines) if '"time/wait_for_batch"' in line and '"step": 3' in line)
    lines[idx] = lines[idx].replace('"time/wait_for_batch": 8.0', '"time/wait_for_batch": NaN')
    (run / "metrics.jsonl").write_text("".join(lines))
    trace = PrimeRLAdapter().parse(run)
    assert 3 not in agg(trace, K.TRAINER_STEP)
    assert any(f"metrics.jsonl:{idx + 1}: skipped row with non-finite value NaN" in w for w in trace.meta.warnings)


def test_overflowing_number_is_non_finite_too(run_copy) -> None:
    run = run_copy("head-559b447")
    lines = _lines(run / "metrics.jsonl")
    idx = next(i for i, line in enumerate(lines) if '"time/wait_for_batch"' in line and '"step": 2' in line)
    lines[idx] = lines[idx].replace('"time/wait_for_batch": 12.0', '"time/wait_for_batch": 1e999')
    (run / "metrics.jsonl").write_text("".join(lines))
    trace = PrimeRLAdapter().parse(run)
    assert 2 not in agg(trace, K.TRAINER_WAIT)
    assert any(f"metrics.jsonl:{idx + 1}: skipped row with a non-finite value" in w for w in trace.meta.warnings)


def test_truncated_last_line_is_skipped_and_marks_partial(fixtures: Path) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "head-559b447-crashed")
    n_lines = len((fixtures / "head-559b447-crashed" / "metrics.jsonl").read_text().splitlines())
    assert any(f"metrics.jsonl:{n_lines}: skipped truncated last line" in w for w in trace.meta.warnings)
    assert trace.meta.partial
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 2, 3]


def test_components_exceeding_the_step_are_clamped_and_warned(tmp_path: Path) -> None:
    row = {
        "step": 1,
        "time": 1.0e9,
        "time/step": 10.0,
        "time/wait_for_batch": 6.0,
        "time/load_data": 0.0,
        "time/forward_backward": 5.0,
        "time/broadcast_weights": 0.0,
        "time/save_ckpt": 0.0,
    }
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(row) + "\n")
    trace = PrimeRLAdapter().parse(path)
    assert agg(trace, K.TRAINER_OTHER) == {1: 0.0}
    assert any("trainer.other clamped to 0 in 1 step(s)" in w and "metrics.jsonl:1" in w for w in trace.meta.warnings)


def test_other_frameworks_metrics_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    rows = [
        {"step": 1, "timing_s/gen": 12.0, "timing_s/update_actor": 8.0, "actor/pg_loss": 0.1},
        {"step": 2, "timing_s/gen": 11.0, "timing_s/update_actor": 8.5, "actor/pg_loss": 0.1},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(NotThisFrameworkError, match=r"^not a prime-rl run: .*none with prime-rl trainer keys"):
        PrimeRLAdapter().parse(path)


def test_time_rows_without_integer_step_are_warned(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    good = {"step": 1, "time/step": 4.0, "time/wait_for_batch": 1.0, "time/forward_backward": 3.0}
    bad = {"time/step": 4.0, "time/wait_for_batch": 1.0, "time/forward_backward": 3.0}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    trace = PrimeRLAdapter().parse(path)
    assert agg(trace, K.TRAINER_STEP) == {1: 4.0}
    assert any("metrics.jsonl:2: skipped trainer-time row without an integer 'step'" in w for w in trace.meta.warnings)
    assert math.isnan(trace.of(K.TRAINER_STEP)["t0"].iloc[0])
