"""Quality targets and the learning metrics, checked against figures computed by hand from each framework's own
log: verl's file-logger JSONL, the reference engine's trainer events, TRL's trainer_state.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed import keys as K
from benchbed.adapter import get_adapter
from benchbed.cli.main import cli
from benchbed.errors import SpecError
from benchbed.metrics import compute_metrics
from benchbed.quality import Target, TargetError, first_reaching
from benchbed.spec import build_spec, spec_id
from benchbed.trace import Trace

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VERL_V0 = FIXTURES / "verl" / "verl-0.9.1-v0"
REF_RUN = FIXTURES / "ref" / "async-4steps"
TRL_RUN = FIXTURES / "trl" / "grpo-spg2-sandbox"
GSM8K = "val-core/openai/gsm8k/acc/mean@1"


@pytest.mark.parametrize(
    ("text", "key", "op", "value", "window"),
    [
        ("reward>=0.5", K.QUALITY_REWARD, ">=", 0.5, 1),
        (" reward >= .25 ", K.QUALITY_REWARD, ">=", 0.25, 1),
        ("eval/openai/gsm8k/acc/mean@1>=0.45", "quality.eval.openai.gsm8k.acc.mean_at_1", ">=", 0.45, 1),
        ("native.trainer.loss<=-1e-1", "native.trainer.loss", "<=", -0.1, 1),
        ("quality.eval.reward>=3", "quality.eval.reward", ">=", 3.0, 1),
        ("reward>=0.3 over 5", K.QUALITY_REWARD, ">=", 0.3, 5),
        ("reward>=0.3  over  1", K.QUALITY_REWARD, ">=", 0.3, 1),
    ],
)
def test_target_forms(text: str, key: str, op: str, value: float, window: int) -> None:
    target = Target.parse(text)
    assert target == Target(key, op, value, window)
    assert Target.parse(str(target)) == target  # the form kept in the trace metadata reads back the same


@pytest.mark.parametrize(
    ("text", "says"),
    [("reward=0.5", "expected NAME>=VALUE"), ("reward>=", "expected NAME>=VALUE"), ("reward>=high", "NAME>=VALUE"),
     ("accuracy>=0.5", "expected 'reward', 'eval/<validation score>'"), (">=0.5", "NAME>=VALUE"),
     ("reward>=0.3 over 0", "expected at least 1 logged value"), ("reward>=0.3 over five", "optionally followed")],
)  # fmt: skip
def test_unreadable_targets_say_what_is_expected_in_one_line(text: str, says: str) -> None:
    with pytest.raises(TargetError, match=says) as raised:
        Target.parse(text)
    assert "\n" not in str(raised.value) and repr(text) in str(raised.value)


def test_first_reaching_is_the_first_logged_value_meeting_the_target_in_step_order() -> None:
    rising, falling = Target("k", ">=", 0.5), Target("k", "<=", 0.5)
    assert first_reaching([3, 1, 2], [0.7, 0.1, 0.5], rising) == 2  # steps out of order; 0.5 meets >= 0.5
    assert first_reaching([1, 2, 3], [math.nan, 0.9, 0.1], rising) == 2  # a NaN meets nothing
    assert first_reaching([1, 2, 3], [0.9, 0.6, 0.4], falling) == 3
    assert first_reaching([1, 2], [0.1, 0.2], rising) is None
    assert first_reaching([], [], rising) is None


def test_over_n_judges_the_trailing_mean_of_the_last_n_logged_values() -> None:
    smoothed = Target("k", ">=", 0.5, window=3)
    # trailing means of 3 (by hand): steps 3: (0.9+0.1+0.2)/3 = 0.4; 4: (0.1+0.2+0.8)/3 = 0.367; 5: 0.5 -> step 5
    assert first_reaching([1, 2, 3, 4, 5], [0.9, 0.1, 0.2, 0.8, 0.5], smoothed) == 5
    assert first_reaching([1, 2, 3, 4, 5], [0.9, 0.1, 0.2, 0.8, 0.5], Target("k", ">=", 0.5)) == 1  # the lucky step
    assert first_reaching([1, 2], [0.9, 0.9], smoothed) is None  # fewer than 3 logged values
    assert first_reaching([1, 2, 3, 4], [0.6, math.nan, 0.6, 0.6], smoothed) == 4  # a NaN is not a logged value


def _measured(trace: Trace, target: str, resources: dict | None = None) -> tuple[dict[str, float], list[str]]:
    trace.meta.extra["quality_target"] = target
    if resources:
        trace.meta.extra["resources"] = resources
    warnings: list[str] = []
    metrics = compute_metrics(trace, warnings=warnings)
    return {name: m.value for name, m in metrics.items()}, warnings


def _verl_log() -> list[dict]:
    return [json.loads(line) for line in (VERL_V0 / "metrics.jsonl").read_text().splitlines() if line.strip()]


def test_verl_validation_target_against_its_own_jsonl() -> None:
    log = _verl_log()
    # by hand: the first step (from 1) whose validation score is at least 0.40, and verl's step timers until then
    first = min(r["step"] for r in log if r["step"] >= 1 and r["data"].get(GSM8K, -1) >= 0.40)
    seconds = sum(r["data"]["timing_s/step"] for r in log if 1 <= r["step"] <= first and "timing_s/step" in r["data"])
    rewards = [r["data"]["critic/score/mean"] for r in sorted(log, key=lambda r: r["step"]) if "critic/score/mean" in
               r["data"]]  # fmt: skip
    run_s = sum(r["data"]["timing_s/step"] for r in log if "timing_s/step" in r["data"])
    values, warnings = _measured(get_adapter("verl").parse(VERL_V0), f"eval/{GSM8K.removeprefix('val-core/')}>=0.40",
                                 {"trainer_gpus": 8, "generator_gpus": 8})  # fmt: skip
    assert first == 3 and values["steps_to_target"] == 3 and values["target_reached"] == 1
    assert values["time_to_target_s"] == pytest.approx(seconds, rel=1e-12)
    assert values["gpu_hours_to_target"] == pytest.approx(16 * seconds / 3600, rel=1e-12)
    assert values["reward_gain_per_gpu_hour"] == pytest.approx((rewards[-1] - rewards[0]) / (16 * run_s / 3600))
    assert not [w for w in warnings if "quality" in w]


def test_verl_quality_rows_leave_out_the_validation_before_training() -> None:
    trace = get_adapter("verl").parse(VERL_V0)
    evals = trace.of("quality.eval.openai.gsm8k.acc.mean_at_1")
    logged = {r["step"]: r["data"][GSM8K] for r in _verl_log() if GSM8K in r["data"]}
    assert 0 in logged  # verl validated before training, at step 0
    assert dict(zip(evals["step"], evals["value"], strict=True)) == {k: v for k, v in logged.items() if k >= 1}
    assert len(trace.of(K.QUALITY_REWARD)) == 6


def test_a_target_never_met_is_a_value_of_its_own_not_zero_time() -> None:
    values, warnings = _measured(get_adapter("verl").parse(VERL_V0), "reward>=0.9", {"trainer_gpus": 8})
    assert values["target_reached"] == 0
    assert not {"steps_to_target", "time_to_target_s", "gpu_hours_to_target"} & set(values)
    assert any("not reached in the run (best 0.5" in w for w in warnings)


def test_a_target_on_a_key_the_run_never_logged_gives_no_learning_metric_and_says_so() -> None:
    values, warnings = _measured(get_adapter("verl").parse(VERL_V0), "eval/aime24>=0.3")
    assert not {"target_reached", "steps_to_target", "time_to_target_s"} & set(values)
    assert any("logged no quality.eval.aime24" in w for w in warnings)


def test_reference_engine_reward_target_against_its_trainer_events() -> None:
    steps = [e for e in map(json.loads, (REF_RUN / "events" / "trainer.jsonl").read_text().splitlines())
             if e["ev"] == "step"]  # fmt: skip
    first = next(e for e in sorted(steps, key=lambda e: e["step"]) if e["reward_mean"] >= 0.2)
    start = min(e["t0"] for e in steps)
    values, _ = _measured(get_adapter("ref").parse(REF_RUN), "reward>=0.2")
    assert values["steps_to_target"] == first["step"] == 2
    assert values["time_to_target_s"] == pytest.approx(first["t1"] - start, abs=1e-6)


def test_trl_reward_target_against_its_trainer_state() -> None:
    history = json.loads((TRL_RUN / "trainer_state.json").read_text())["log_history"]
    rewards = {e["step"]: e["reward"] for e in history if "reward" in e}
    first = min(step for step, reward in rewards.items() if reward >= 0.21)
    trace = get_adapter("trl").parse(TRL_RUN)
    spans = trace.of(K.TRAINER_STEP)
    values, _ = _measured(trace, "reward>=0.21")
    assert values["steps_to_target"] == first == 3
    assert values["time_to_target_s"] == pytest.approx(
        float(spans.loc[spans["step"] == first, "t1"].max() - spans["t0"].min())
    )
    assert dict(zip(trace.of(K.QUALITY_REWARD)["step"], trace.of(K.QUALITY_REWARD)["value"], strict=True)) == rewards


def test_final_reward_mean_is_the_mean_of_the_last_quarter_of_logged_rewards_and_needs_no_target() -> None:
    log = sorted(_verl_log(), key=lambda r: r["step"])
    rewards = [r["data"]["critic/score/mean"] for r in log if "critic/score/mean" in r["data"]]
    last = math.ceil(len(rewards) / 4)  # 6 logged steps: the last 2
    metrics = compute_metrics(get_adapter("verl").parse(VERL_V0))
    assert len(rewards) == 6 and last == 2
    assert metrics["final_reward_mean"].value == pytest.approx(sum(rewards[-last:]) / last, rel=1e-12)
    assert metrics["final_reward_mean"].unit == "reward"
    assert metrics["reward_gain"].value == pytest.approx(sum(rewards[-2:]) / 2 - sum(rewards[:2]) / 2, rel=1e-12)


def test_the_spec_quality_table_is_checked_and_does_not_change_the_spec_id() -> None:
    base = {"name": "q", "adapter": "sim"}
    with_target = build_spec({**base, "quality": {"target": "reward >= 0.5"}})
    assert with_target.quality is not None and with_target.quality.target == "quality.reward_mean>=0.5"
    assert spec_id(with_target) == spec_id(build_spec(base))
    with pytest.raises(SpecError, match=r"quality\.target.*expected NAME>=VALUE"):
        build_spec({**base, "quality": {"target": "reward>0.5"}})


def test_ingest_target_reaches_the_record_and_a_bad_one_exits_2(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "store")
    done = runner.invoke(cli, ["ingest", str(REF_RUN), "--adapter", "ref", "--store", store, "--target",
                               "reward>=0.2", "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    record = record[0] if isinstance(record, list) else record
    assert record["spec"]["quality"] == {"target": "quality.reward_mean>=0.2"}
    assert record["metrics"]["steps_to_target"]["value"] == 2
    bad = runner.invoke(cli, ["ingest", str(REF_RUN), "--adapter", "ref", "--store", store, "--target", "reward"])
    assert bad.exit_code == 2 and "--target" in bad.output and "expected NAME>=VALUE" in bad.output


@pytest.mark.parametrize(
    ("adapter", "fixture", "native", "first", "per_step"),
    [  # each fixture generator's logged reward (tests/fixtures/<adapter>/make_fixtures.py): first + per_step × i
        ("nemo_rl", "async-6-steps", "native.nemo_rl.train/reward", 0.25, 0.05),
        ("skyrl", "fully-async-6-steps", "native.skyrl.reward/avg_raw_reward", 0.4, 0.02),
        ("openrlhf", "async-3c3be62", "native.openrlhf.train/rollout/reward_mean", 0.25, 0.05),
        ("roll", "async-8eb27cc", "native.roll.critic/score/mean", 0.3, 0.05),
    ],
)
def test_history_adapters_keep_the_training_reward_as_the_quality_row(
    adapter: str, fixture: str, native: str, first: float, per_step: float
) -> None:
    trace = get_adapter(adapter).parse(FIXTURES / adapter / fixture)
    rows = trace.of(K.QUALITY_REWARD).sort_values("step")
    assert rows["value"].tolist() == pytest.approx([first + per_step * i for i in range(len(rows))])
    assert rows["step"].tolist() == list(range(1, len(rows) + 1)) and len(rows) == 6
    assert not len(trace.of(native))  # mapped, not kept twice
