"""The OpenRLHF adapter: its tracker histories (TensorBoard and W&B offline, written by OpenRLHF's own loggers with
its trainers' keys and cadence at 3c3be62: tests/fixtures/openrlhf/make_fixtures.py) read to figures checked by
hand, with and without --adapter, and the rendered `ray job submit` launch of the comparison spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories import open_history
from benchbed.errors import NotThisFrameworkError, SpecError
from benchbed.spec import build_spec, load_spec, load_spec_data

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "openrlhf"
SYNC, ASYNC = FIXTURES / "sync-3c3be62", FIXTURES / "async-3c3be62"
SPEC = ROOT / "experiments" / "compare" / "openrlhf.toml"
ADAPTER = get_adapter("openrlhf")
# train_ppo_ray's argument names at OpenRLHF@3c3be62 that the renderer uses (its parser is built in `__main__`
# behind imports of ray, torch and vLLM, so it cannot be asked here).
PARSER_FLAGS = {
    "--actor.model_name_or_path", "--data.prompt_dataset", "--data.input_key", "--data.label_key",
    "--reward.remote_url", "--algo.advantage.estimator", "--rollout.batch_size", "--rollout.n_samples_per_prompt",
    "--train.batch_size", "--rollout.max_new_tokens", "--data.max_samples", "--train.num_episodes",
    "--actor.num_nodes", "--actor.num_gpus_per_node", "--vllm.num_engines", "--vllm.tensor_parallel_size",
    "--ds.zero_stage", "--ds.param_dtype", "--actor.adam.lr", "--algo.kl.init_coef", "--ckpt.save_steps",
    "--ckpt.path", "--ckpt.output_dir", "--logger.logging_steps", "--logger.tensorboard_dir",
    "--logger.wandb.run_name", "--data.max_len", "--algo.kl.estimator", "--ref.num_nodes", "--ref.num_gpus_per_node",
    "--data.apply_chat_template", "--ds.packing_samples", "--actor.gradient_checkpointing_enable",
    "--algo.kl.use_loss", "--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
    "--train.async_queue_size", "--train.async_enable", "--train.partial_rollout_enable",
}  # fmt: skip


def per_step(trace, key: str) -> list[tuple[int, float]]:
    rows = trace.of(key).sort_values("step")
    return [(int(s), float(v)) for s, v in zip(rows["step"], rows["value"], strict=True)]


def test_sync_tensorboard_without_adapter(tmp_path: Path, ingest) -> None:
    """Sync: generation blocks the trainer. Window steps 2-6: Σ step_total = 62+58+60+64+56 = 300 s, Σ generation =
    150 s, compute (make_experience 6 + ppo_train 20) x 5 = 130 s, broadcast 4 x 5 = 20 s, 64 samples a step."""
    record, m = ingest(SYNC, "--store", tmp_path)
    assert record["adapter"]["name"] == "openrlhf" and record["adapter"]["mode"] == "sync"
    assert m["trainer_idle_ratio"] == pytest.approx(150 / 300)
    assert m["trainer_compute_ratio"] == pytest.approx(130 / 300)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(20 / 300)
    assert m["step_time_mean_s"] == pytest.approx(60.0)
    assert m["trainer_throughput_sps"] == pytest.approx(5 * 64 / 300)
    # OpenRLHF's own figure, as logged: accepted samples / prompts consumed x 100 (400, 640, 800, 400, 640)
    assert m["framework_dynamic_filtering_pass_rate"] == pytest.approx(2880 / 5)


def test_async_wandb_queue_wait_is_the_rest_of_the_loop(tmp_path: Path, ingest) -> None:
    """Async: step_total is the loop's wall clock; the trainer waits for step_total − 30 s (its three timers): 70,
    36, 30, 30, 30, 34 -> 40, 6, 0, 0, 0, 4. Window steps 2-6: wait 10 s of 160 s."""
    record, m = ingest(ASYNC / "wandb", "--store", tmp_path)
    assert record["adapter"]["name"] == "openrlhf" and record["adapter"]["mode"] == "async"
    assert m["trainer_idle_ratio"] == pytest.approx(10 / 160)
    assert m["trainer_compute_ratio"] == pytest.approx(130 / 160)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(20 / 160)
    assert m["step_time_mean_s"] == pytest.approx(32.0)
    assert m["trainer_other_ratio"] == pytest.approx(0.0)


def test_wandb_rows_are_keyed_on_global_step() -> None:
    """WandbLogger logs the samples table and the figures as two W&B steps, and an evaluation as one more (at steps
    3 and 6); the trace has one row per global_step."""
    assert open_history(ASYNC / "wandb").frame["step"].tolist() == list(range(14))
    trace = ADAPTER.parse(ASYNC)
    assert per_step(trace, "trainer.wait") == [(1, 40.0), (2, 6.0), (3, 0.0), (4, 0.0), (5, 0.0), (6, 4.0)]
    assert set(trace.of("trainer.wait")["actor"]) == {"trainer"}
    assert per_step(trace, "samples.trained") == [(s, 64.0) for s in range(1, 7)]
    # async generation is the generator actor's own time: kept native, not trainer wait
    assert per_step(trace, "native.openrlhf.train/timing/generation")[0] == (1, 40.0)
    assert per_step(ADAPTER.parse(SYNC), "trainer.wait")[1] == (2, 32.0)


@pytest.mark.parametrize("run", [SYNC, ASYNC], ids=["tensorboard", "wandb"])
def test_the_rollout_reward_and_the_evaluations_are_quality_rows(run: Path) -> None:
    trace = ADAPTER.parse(run)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx([0.25 + 0.05 * i for i in range(6)])  # rollout/reward_mean
    # log_eval at steps 3 and 6: eval/eval_gsm8k_pass1, on W&B keyed on eval/global_step
    pass1 = trace.of("quality.eval.gsm8k_pass1").sort_values("step")
    assert list(zip(pass1["step"], pass1["value"], strict=True)) == [(3, 0.375), (6, 0.5)]
    assert list(trace.of("quality.eval.gsm8k_pass4")["value"]) == pytest.approx([0.625, 0.75])
    assert sorted(set(trace.of("trainer.step")["step"])) == [1, 2, 3, 4, 5, 6]  # the eval rows add no step


def test_the_package_is_a_key_map_a_flag_table_and_at_most_150_lines_of_python() -> None:
    """The kit's budget for a history-based adapter, which the README and the framework page state."""
    package = ROOT / "adapters" / "openrlhf"
    assert (package / "keymap.toml").is_file() and (package / "flags.toml").is_file()
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_other_frameworks_histories_are_refused() -> None:
    with pytest.raises(NotThisFrameworkError, match="not a openrlhf history"):
        ADAPTER.parse(ROOT / "tests" / "fixtures" / "roll" / "async-8eb27cc")


def test_the_comparison_spec_renders_the_async_launch(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(SPEC), tmp_path)
    assert plan.argv[:8] == ["ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--", "python3", "-m"]
    assert plan.argv[8] == "openrlhf.cli.train_ppo_ray"
    flags = plan.argv[9:]
    assert {f for f in flags if f.startswith("--")} <= PARSER_FLAGS
    pairs = dict(zip(flags, flags[1:], strict=False))
    assert pairs["--rollout.batch_size"] == "64" and pairs["--rollout.n_samples_per_prompt"] == "8"
    assert pairs["--train.batch_size"] == "512" and pairs["--data.max_samples"] == "6400"
    assert (pairs["--actor.num_nodes"], pairs["--actor.num_gpus_per_node"]) == ("2", "8")
    assert (pairs["--vllm.num_engines"], pairs["--vllm.tensor_parallel_size"]) == ("4", "4")
    assert pairs["--train.async_queue_size"] == "1" and "--train.async_enable" in flags
    assert pairs["--logger.tensorboard_dir"] == str(tmp_path / "tensorboard")
    assert "--train.colocate_all" not in flags and "--algo.kl.use_loss" not in flags


def test_a_rendered_runs_tensorboard_is_read_from_its_run_directory(tmp_path: Path) -> None:
    shutil.copytree(SYNC, tmp_path / "tensorboard")  # where --logger.tensorboard_dir points
    assert ADAPTER.find_runs(tmp_path) == [tmp_path]
    trace = ADAPTER.parse(tmp_path)
    assert per_step(trace, "trainer.step") == [(s + 1, t) for s, t in enumerate((70.0, 62.0, 58.0, 60.0, 64.0, 56.0))]


@pytest.mark.parametrize(("change", "message"), [({"openrlhf.partial_rollout": True, "workload.max_staleness": 0},
                                                    "partial_rollout needs asynchronous"),
                                                   ({"resources.colocated": True}, "does not colocate")])  # fmt: skip
def test_impossible_launches_are_refused(change: dict, message: str, tmp_path: Path) -> None:
    spec = load_spec(SPEC, [f"{k}={json.dumps(v)}" for k, v in change.items()])
    with pytest.raises(SpecError, match=message):
        ADAPTER.render(spec, tmp_path)


def test_a_spec_without_prompts_or_reward_is_refused(tmp_path: Path) -> None:
    data = load_spec_data(SPEC)
    del data["openrlhf"]["remote_rm_url"]
    with pytest.raises(
        SpecError, match="name the prompts and the reward: openrlhf.prompt_data, openrlhf.remote_rm_url"
    ):
        ADAPTER.render(build_spec(data, str(SPEC)), tmp_path)


@pytest.mark.slow
def test_fixtures_regenerate(tmp_path: Path, fixture_generator, sorted_rows) -> None:
    pytest.importorskip("openrlhf.utils.logging_utils", reason="pip install --no-deps openrlhf==0.11.2")
    fixture_generator("openrlhf/make_fixtures.py").main(tmp_path)
    for run in ("sync-3c3be62", "async-3c3be62"):
        mine, theirs = ADAPTER.parse(tmp_path / run), ADAPTER.parse(FIXTURES / run)
        assert sorted_rows(mine).equals(sorted_rows(theirs)), run
