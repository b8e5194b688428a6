"""The Miles adapter: its dashboard fixture (README.md beside it says what is imitated) ingested through the CLI to
figures worked out by hand, its phase intervals as spans, slime's and Miles' histories told apart, and its own
command rendered from a spec."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories.history import History, HistorySource, frame_from_rows
from benchbed.errors import NotThisFrameworkError
from benchbed.pipeline import recognising_adapters
from benchbed.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "miles"
RUN = FIXTURES / "fully-async-5-steps"
ADAPTER = get_adapter("miles")
# steps 2..5 (warmup 1): train_wait 4, 2.5, 6, 3.5 s (1.5 s of weight push inside each) + the 20 s train block
WAIT, STEP = [4 - 1.5, 2.5 - 1.5, 6 - 1.5, 3.5 - 1.5], [4 + 20, 2.5 + 20, 6 + 20, 3.5 + 20]


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    assert sum(len(p.read_text().splitlines()) for p in (ROOT / "adapters" / "miles").glob("*.py")) <= 150


def test_a_fully_async_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(RUN, "--adapter", "miles", "--store", tmp_path)
    assert record["adapter"] == {"name": "miles", "framework": "miles", "version": "31f1ca9", "mode": "fully_async"}
    assert sum(WAIT) == 10 and sum(STEP) == 96
    assert got["trainer_idle_ratio"] == pytest.approx(10 / 96)  # Σ wait / Σ step after warmup 1
    assert got["step_time_mean_s"] == pytest.approx(96 / 4)
    assert got["trainer_compute_ratio"] == pytest.approx(4 * (14 + 4) / 96)  # actor_train + log_probs
    assert got["trainer_weight_sync_ratio"] == pytest.approx(4 * 1.5 / 96)
    assert got["trainer_throughput_sps"] == pytest.approx(4 * 32 / 96)  # train/global_batch_size 32 a step
    assert got["framework_trainer_idle_ratio"] == pytest.approx((4 / 24 + 2.5 / 22.5 + 6 / 26 + 3.5 / 23.5) / 4)
    assert got["framework_staleness_mean"] == pytest.approx((0.5 + 0.75 + 1.0 + 0.5) / 4)  # rollouts 1..4
    assert got["framework_staleness_max_per_step"] == pytest.approx((1 + 1 + 2 + 1) / 4)


def test_rewards_and_evaluations_are_quality_rows() -> None:
    trace = ADAPTER.parse(RUN)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx(
        [0.3 + 0.05 * k for k in range(5)]
    )  # the trainer's rollout/raw_reward
    score = trace.of("quality.eval.gsm8k").sort_values("step")
    assert list(zip(score["step"], score["value"], strict=True)) == [(3, 0.375), (5, 0.5)]  # eval at rollouts 2, 4


def test_the_phase_intervals_are_spans_on_the_run_clock() -> None:
    trace = ADAPTER.parse(RUN)
    waits = trace.of("native.phase/train_wait").sort_values(["t0", "attrs"])
    assert len(waits) == 2 * 5  # two training ranks; the last train_wait never ended and is left out, with a warning
    assert list(waits["t0"][::2]) == [10.0, 60.0, 84.0, 106.5, 132.5]  # start_ts + 10 s, then each train block's end
    assert list((waits["t1"] - waits["t0"])[::2]) == [30.0, 4.0, 2.5, 6.0, 3.5]  # perf/train_wait_time
    assert [json.loads(a)["rank"] for a in waits["attrs"][:2]] == [0, 1] and set(waits["actor"]) == {"trainer"}
    rollouts = trace.of("native.phase/rollout")
    assert len(rollouts) == 5 and set(rollouts["actor"]) == {"generator"}
    assert list(rollouts["t1"] - rollouts["t0"]) == [24.0] * 5
    steps = trace.of("trainer.step").sort_values("step")  # slime's spans from the perf dicts: the same clock
    assert list(steps["t1"]) == list(waits["t1"][::2] + 20)
    assert sum("never ended" in w for w in trace.meta.warnings) == 2


def history(keys: list[str]) -> History:
    """A one-row tracker history with these keys (as W&B would hand them over)."""
    return History(HistorySource("wandb", "r", "wandb/run-r"), frame_from_rows([(0, None, dict.fromkeys(keys, 1.0))]))


def test_a_history_with_milesfully_async_keys_is_miles_and_never_slimes() -> None:
    miles = ["perf/step_time", "perf/train_wait_time", "rollout/fully_async/avg_staleness", "rollout/step"]
    slime = ["perf/step_time", "perf/train_wait_time", "rollout/step"]
    assert recognising_adapters(miles) == ["miles"]
    assert recognising_adapters(slime) == ["slime"]
    with pytest.raises(NotThisFrameworkError, match="not a slime history"):
        get_adapter("slime").parse_history(history(miles))
    with pytest.raises(NotThisFrameworkError, match="not a miles history"):
        ADAPTER.parse_history(history(slime))


def test_a_folder_without_a_dashboard_is_not_a_miles_run(tmp_path: Path) -> None:
    with pytest.raises(NotThisFrameworkError, match=r"holds no dashboard/metrics.jsonl"):
        ADAPTER.parse(tmp_path)


def test_the_comparison_spec_renders_miles_own_command(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "miles.toml"), tmp_path)
    assert plan.cwd == "/root/miles" and plan.argv[:2] == ["python3", "train_async.py"]
    flags = dict(zip(plan.argv[2::2], plan.argv[3::2], strict=False))
    expected = {"--hf-checkpoint": "Qwen/Qwen3-30B-A3B", "--rollout-batch-size": "64", "--n-samples-per-prompt": "8",
                "--global-batch-size": "512", "--rollout-max-response-len": "8192", "--num-rollout": "100",
                "--actor-num-nodes": "2", "--actor-num-gpus-per-node": "8", "--rollout-num-gpus": "16",
                "--max-weight-staleness": "1", "--dump-details": str(tmp_path)}  # fmt: skip
    assert {k: flags[k] for k in expected} == expected
    assert {"--use-miles-dashboard", "--fully-async"} <= set(plan.argv) and "--colocate" not in plan.argv


def test_the_fixtures_regenerate(fixture_generator: Callable, tmp_path: Path) -> None:
    fixture_generator("miles/make_fixtures.py").main(tmp_path)
    for name in ("meta.json", "metrics.jsonl", "phases/20251206_19.jsonl"):
        mine, theirs = tmp_path / RUN.name / "dashboard" / name, RUN / "dashboard" / name
        assert mine.read_bytes() == theirs.read_bytes(), name


def test_bad_lines_are_named_by_file_and_line_and_skipped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    metrics, phases = run / "dashboard" / "metrics.jsonl", run / "dashboard" / "phases" / "20251206_19.jsonl"
    metrics.write_text(metrics.read_text() + '{"step": 5}\n')
    phases.write_text('{"name": "train"}\n' + phases.read_text())
    trace = ADAPTER.parse(run)
    assert (
        f'{metrics}:23: not a MetricsRecord; expected {{"ts": T, "step": N, "metrics": {{...}}}}' in trace.meta.warnings
    )
    assert f"{phases}:1: not a PhaseEvent; expected {{name, t0, t1, node, gpus, rank, role}}" in trace.meta.warnings
    assert len(trace.of("trainer.step")) == 5 and len(trace.of("native.phase/train")) == 10
