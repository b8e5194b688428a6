"""The ROLL adapter: its tracker histories (TensorBoard and W&B offline, written with ROLL@8eb27cc's keys and cadence
by tests/fixtures/roll/make_fixtures.py) read to figures checked by hand, with and without --adapter, ROLL's
one-step-late `time/step_total` put back on its step, and the rendered RLVR pipeline config of the comparison spec."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from benchbed.adapters.roll.parse import parse_history
from benchbed.adapters.roll.render import config as render_config

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories import History, HistorySource
from benchbed.errors import NotThisFrameworkError, SpecError
from benchbed.spec import build_spec, load_spec, load_spec_data

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "roll"
ASYNC, SYNC = FIXTURES / "async-8eb27cc", FIXTURES / "sync-8eb27cc"
SPEC = ROOT / "experiments" / "compare" / "roll.toml"
ADAPTER = get_adapter("roll")


def per_step(trace, key: str) -> list[tuple[int, float]]:
    rows = trace.of(key).sort_values("step")
    return [(int(s), float(v)) for s, v in zip(rows["step"], rows["value"], strict=True)]


def test_async_tensorboard_without_adapter(tmp_path: Path, ingest) -> None:
    """Each step: stop_server 1 + model_update 2 + generate G + ref 3 + old log-probs 4 + train 20 s. Window steps
    2-6 (ROLL's 1-5): G = 10, 6, 8, 14, 12 + a 2 s validation at ROLL's 3 -> Σ step = 5 x 30 + 50 + 2 = 202 s;
    off_policy_ratio 0.75, 0.5, 1, 0.25, 0.5."""
    record, m = ingest(ASYNC, "--store", tmp_path)
    assert record["adapter"]["name"] == "roll" and record["adapter"]["mode"] == "async"
    assert m["trainer_idle_ratio"] == pytest.approx(50 / 202)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(10 / 202)
    assert m["trainer_compute_ratio"] == pytest.approx(135 / 202)
    assert m["trainer_other_ratio"] == pytest.approx((5 + 2) / 202)  # stop_server, the validation at ROLL step 3
    assert m["step_time_mean_s"] == pytest.approx(40.4)
    assert m["trainer_throughput_sps"] == pytest.approx(5 * 64 / 202)
    assert m["framework_staleness_mean"] == pytest.approx(3.0 / 5)
    assert any("step(s) 7 have none and are left out" in w for w in record["warnings"])


def test_sync_wandb_with_adapter(tmp_path: Path, ingest) -> None:
    """Sync (async_generation_ratio 0 in the W&B config): G = 28, 32, 30, 26, 34 in the window, a 2 s validation at
    ROLL's 3 -> 150 s of 302 s."""
    record, m = ingest(SYNC, "--adapter", "roll", "--store", tmp_path)
    assert record["adapter"]["mode"] == "sync"
    assert m["trainer_idle_ratio"] == pytest.approx(150 / 302)
    assert m["step_time_mean_s"] == pytest.approx(60.4)
    assert m["framework_staleness_mean"] == pytest.approx(0.0)


def test_each_step_gets_its_own_total() -> None:
    """ROLL logs 0, 82, 40, ... at its steps 0, 1, 2, ...: step 1 (ROLL's 0) took 82 s; the last step has none."""
    trace = ADAPTER.parse(ASYNC)
    assert per_step(trace, "trainer.step") == [(1, 82.0), (2, 40.0), (3, 36.0), (4, 40.0), (5, 44.0), (6, 42.0)]
    assert per_step(trace, "trainer.wait") == [(1, 50.0), (2, 10.0), (3, 6.0), (4, 8.0), (5, 14.0), (6, 12.0)]
    assert trace.meta.mode == "async" and "async_generation_ratio" not in trace.meta.extra  # told by off_policy_ratio
    assert ADAPTER.parse(SYNC).meta.extra["async_generation_ratio"] == 0.0  # the W&B config


@pytest.mark.parametrize("run", ["async", "sync"])
def test_the_score_and_the_validations_are_quality_rows(run: str) -> None:
    """val() at ROLL's steps 0 and 3 (6, the last, has no total and is left out): val_correct/all/mean 0.25, 0.375."""
    trace = ADAPTER.parse(ASYNC if run == "async" else SYNC)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx([0.3 + 0.05 * i for i in range(6)])  # critic/score/mean
    for name in ("all", "math"):
        correct = trace.of(f"quality.eval.{name}.mean").sort_values("step")
        assert list(zip(correct["step"], correct["value"], strict=True)) == [(1, 0.25), (4, 0.375)]


def test_a_restart_leaves_the_step_before_it_out() -> None:
    """After a resume ROLL logs time/step_total = 0 (pre_step_total_time starts again): the step before has none."""
    rows = [{"step": s, "time/step_total": t, "time/step_generate": 5.0} for s, t in enumerate((0.0, 10.0, 11.0))]
    rows += [{"step": 3, "time/step_total": 0.0, "time/step_generate": 5.0},
             {"step": 4, "time/step_total": 13.0, "time/step_generate": 5.0}]  # fmt: skip
    history = History(HistorySource("jsonl", "r", "metrics.jsonl"), pd.DataFrame(rows))
    trace = parse_history(history)
    assert per_step(trace, "trainer.step") == [(1, 10.0), (2, 11.0), (4, 13.0)]
    assert "step(s) 3, 5 have none" in trace.meta.warnings[0]
    assert trace.meta.mode == "sync"


def test_the_package_is_a_key_map_a_config_template_and_at_most_150_lines_of_python() -> None:
    """The kit's budget for a history-based adapter, which the README and the framework page state."""
    package = ROOT / "adapters" / "roll"
    assert (package / "keymap.toml").is_file() and (package / "benchbed_rlvr.yaml").is_file()
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_other_frameworks_histories_are_refused() -> None:
    with pytest.raises(NotThisFrameworkError, match="not a roll history"):
        ADAPTER.parse(ROOT / "tests" / "fixtures" / "openrlhf" / "sync-3c3be62")


def test_the_comparison_spec_renders_the_pipeline_config(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(SPEC), tmp_path)
    assert plan.cwd == "/workspace/ROLL"
    assert plan.argv[:2] == ["python", "examples/start_rlvr_pipeline.py"]
    config_path = plan.argv[plan.argv.index("--config_path") + 1]
    assert os.path.normpath(os.path.join("/workspace/ROLL/examples", config_path)) == str(tmp_path.resolve())
    assert plan.argv[-2:] == ["--config_name", "benchbed_rlvr"]
    assert plan.files["benchbed_rlvr.yaml"].startswith("# ROLL RLVR pipeline config rendered by benchbed")
    config = render_config(load_spec(SPEC), tmp_path)
    assert config["async_generation_ratio"] == 1
    assert (config["rollout_batch_size"], config["num_return_sequences_in_group"]) == (64, 8)
    assert (config["prompt_length"], config["response_length"]) == (2048, 8192)
    assert config["actor_train"]["device_mapping"] == "list(range(0,16))"
    assert config["actor_infer"]["device_mapping"] == "list(range(16,32))"
    assert config["actor_train"]["training_args"]["gradient_accumulation_steps"] == 512 // 4  # dp 16 / TP4
    assert config["tracker_kwargs"] == {"log_dir": str(tmp_path / "tensorboard")}
    assert config["track_with"] == "tensorboard" and config["max_steps"] == 100


def test_the_rendered_file_is_the_config_in_yaml(tmp_path: Path) -> None:
    """What Hydra (OmegaConf, on PyYAML) reads back is the config, learning rate 1e-06 a float (not a string)."""
    yaml = pytest.importorskip("yaml")
    text = ADAPTER.render(load_spec(SPEC), tmp_path).files["benchbed_rlvr.yaml"]
    assert yaml.safe_load(text) == render_config(load_spec(SPEC), tmp_path)
    assert yaml.safe_load(text)["actor_train"]["training_args"]["learning_rate"] == 1e-06


def test_an_asynchronous_pipeline_on_shared_gpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="needs its own generator GPUs"):
        ADAPTER.render(load_spec(SPEC, ["resources.colocated=true"]), tmp_path)


def test_a_rendered_runs_tensorboard_is_read_from_its_run_directory(tmp_path: Path, fixture_generator) -> None:
    pytest.importorskip("torch", reason="the fixtures are written with torch's SummaryWriter")
    # where the rendered config's tracker_kwargs.log_dir points
    fixture_generator("roll/make_fixtures.py").write_tensorboard(tmp_path / "tensorboard")
    assert ADAPTER.find_runs(tmp_path) == [tmp_path]
    assert per_step(ADAPTER.parse(tmp_path), "trainer.step")[0] == (1, 82.0)


def test_a_spec_without_a_checkout_or_data_is_refused(tmp_path: Path) -> None:
    data = load_spec_data(SPEC)
    del data["roll"]["roll_dir"]
    with pytest.raises(SpecError, match="name the ROLL checkout and the data: roll.roll_dir, roll.train_file"):
        ADAPTER.render(build_spec(data, str(SPEC)), tmp_path)


@pytest.mark.slow
def test_fixtures_regenerate(tmp_path: Path, fixture_generator, sorted_rows) -> None:
    pytest.importorskip("torch", reason="the fixtures are written with torch's SummaryWriter")
    fixture_generator("roll/make_fixtures.py").main(tmp_path)
    for run in ("async-8eb27cc", "sync-8eb27cc"):
        mine, theirs = ADAPTER.parse(tmp_path / run), ADAPTER.parse(FIXTURES / run)
        assert sorted_rows(mine).equals(sorted_rows(theirs)), run
