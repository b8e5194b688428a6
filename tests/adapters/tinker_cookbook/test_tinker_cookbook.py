"""The tinker-cookbook adapter: its log-folder fixture (README.md beside it says what is imitated) ingested through
the CLI to figures worked out by hand, its Chrome-trace B/E pairs as spans, and its own command rendered from a
spec."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories import open_history
from benchbed.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "tinker_cookbook"
RUN = FIXTURES / "sync-4-steps"
ADAPTER = get_adapter("tinker_cookbook")
# steps 2..4 (i_batch 1..3; warmup 1): sampling 6, 7.5, 5 s; the 9 s train step (1.5 s of weight push inside it);
# a 4 s evaluation in step 3; 0.5 s of rolling checkpoint untimed in each
STEP = [6 + 9 + 0.5, 4 + 7.5 + 9 + 0.5, 5 + 9 + 0.5]


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    assert sum(len(p.read_text().splitlines()) for p in (ROOT / "adapters" / "tinker_cookbook").glob("*.py")) <= 150


def test_a_synchronous_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(RUN, "--adapter", "tinker_cookbook", "--store", tmp_path)
    assert record["adapter"] == {"name": "tinker_cookbook", "framework": "tinker_cookbook", "version": "9dfcc3a",
                                 "mode": "sync"}  # fmt: skip
    assert sum(STEP) == 51
    assert got["trainer_idle_ratio"] == pytest.approx((6 + 7.5 + 5) / 51)  # Σ time/sampling / Σ time/total
    assert got["step_time_mean_s"] == pytest.approx(51 / 3)
    assert got["trainer_compute_ratio"] == pytest.approx(3 * (9 - 1.5) / 51)
    assert got["trainer_weight_sync_ratio"] == pytest.approx(3 * 1.5 / 51)
    assert got["trainer_other_ratio"] == pytest.approx((4 + 3 * 0.5) / 51)  # the evaluation and the untimed rest
    assert got["trainer_throughput_sps"] == pytest.approx(3 * 16 / 51)  # env/all/total_episodes


def test_rewards_and_evaluations_are_quality_rows() -> None:
    trace = ADAPTER.parse(RUN)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["step"]) == [1, 2, 3, 4] and list(reward["value"]) == pytest.approx([0.2, 0.25, 0.3, 0.35])
    score = trace.of("quality.eval.env.all.reward.total").sort_values("step")  # eval_every 2: i_batch 0 and 2
    assert list(score["step"]) == [1, 3] and list(score["value"]) == pytest.approx([0.25, 0.45])


def test_the_trace_events_are_spans_numbered_by_the_scope_step() -> None:
    trace = ADAPTER.parse(RUN)
    train = trace.of("native.scope/do_train_step_and_get_sampling_client").sort_values("t0")
    assert list(train["step"]) == [1, 2, 3, 4]  # update_scope_context({"step": i_batch})
    assert list(train["t0"]) == [1 + 4 + 12, 26.5 + 6, 42 + 4 + 7.5, 63 + 5]  # after the initial sampling client
    assert list(train["t1"] - train["t0"]) == [9.0] * 4
    assert [json.loads(a)["track"] for a in train["attrs"]] == ["Task-1"] * 4
    samples = trace.of("native.scope/sample_async")
    assert len(samples) == 16 and set(samples["step"]) == {-1}  # one per group and iteration, on their own tasks
    sampling = trace.of("native.scope/sampling").sort_values("t0")
    assert list(sampling["t1"] - sampling["t0"]) == [12.0, 6.0, 7.5, 5.0]  # the time/sampling figures
    assert trace.meta.warnings == []


def test_an_async_history_leaves_the_untimed_wait_and_the_evaluation_loop_out(tmp_path: Path) -> None:
    rows = [
        {
            "step": 0,
            "training_client/step": 0,
            "time/total": 9.0,
            "env/all/total_episodes": 16,
            "time/do_train_step_and_get_sampling_client": 9.0,
            "time/save_checkpoint_and_get_sampling_client": 1.5,
        },
        {"step": 1, "test/env/all/reward/total": 0.5, "time/total": 3.0},  # the evaluation loop's own row
        {
            "step": 1,
            "training_client/step": 1,
            "time/total": 8.0,
            "env/all/total_episodes": 16,
            "time/do_train_step_and_get_sampling_client": 8.0,
            "time/save_checkpoint_and_get_sampling_client": 1.5,
        },
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))  # fmt: skip
    trace = ADAPTER.parse(tmp_path)
    assert trace.meta.mode == "async" and list(trace.of("trainer.step")["value"]) == [9.0, 8.0]
    assert trace.of("trainer.wait").empty and trace.of("quality.eval.env.all.reward.total").empty
    assert any("trainer idle is not measured" in w for w in trace.meta.warnings)


def test_the_comparison_spec_renders_the_recipes_own_command(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "tinker_cookbook.toml"), tmp_path)
    assert plan.argv[:3] == ["python", "-m", "tinker_cookbook.recipes.math_rl.train"]
    args = dict(a.split("=", 1) for a in plan.argv[3:])
    expected = {"model_name": "Qwen/Qwen3-30B-A3B", "group_size": "8", "groups_per_batch": "64",
                "max_tokens": "8192", "max_steps": "100", "max_steps_off_policy": "1", "log_path": str(tmp_path),
                "env": "math"}  # fmt: skip
    assert {k: args[k] for k in expected} == expected


def test_the_fixtures_regenerate(fixture_generator: Callable, tmp_path: Path) -> None:
    fixture_generator("tinker_cookbook/make_fixtures.py").main(tmp_path)
    for name in ("metrics.jsonl", "trace_events.jsonl"):
        assert (tmp_path / RUN.name / name).read_bytes() == (RUN / name).read_bytes(), name
    assert open_history(RUN / "metrics.jsonl").keys  # the kit's JSON-lines reader takes the JsonLogger's lines
