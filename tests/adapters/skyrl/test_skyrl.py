"""The SkyRL adapter: its W&B offline fixtures (README.md beside them says what is imitated) ingested through the CLI,
with and without --adapter, to figures worked out by hand; its own command rendered from a spec."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories import open_history
from benchbed.adapterkit.upstream import upstream_list
from benchbed.errors import AdapterError
from benchbed.spec import build_spec, load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "skyrl"
ASYNC = FIXTURES / "fully-async-6-steps"
ADAPTER = get_adapter("skyrl")
# steps 2..6: wait + 0.5 convert + 12.5 run_training + 1.5 sync_weights, plus eval (steps 3, 6) and a checkpoint (6)
WINDOW_STEPS = [3 + 14.5, 1 + 14.5 + 6, 4 + 14.5, 0.5 + 14.5, 2.5 + 14.5 + 6 + 4]


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    package = ROOT / "adapters" / "skyrl"
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_a_fully_async_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(ASYNC, "--adapter", "skyrl", "--store", tmp_path)
    total = sum(WINDOW_STEPS)
    assert record["adapter"] == {"name": "skyrl", "framework": "skyrl", "version": "0.3.0", "mode": "fully_async"}
    assert total == 99.5 and got["step_time_mean_s"] == pytest.approx(total / 5)
    assert got["trainer_idle_ratio"] == pytest.approx((3 + 1 + 4 + 0.5 + 2.5) / total)  # wait_for_generation_buffer
    assert got["trainer_compute_ratio"] == pytest.approx(5 * 12.5 / total)
    assert got["trainer_weight_sync_ratio"] == pytest.approx(5 * 1.5 / total)
    assert got["trainer_checkpoint_ratio"] == pytest.approx(4 / total)
    assert got["trainer_other_ratio"] == pytest.approx((5 * 0.5 + 12) / total)  # convert + eval after the step timer
    assert got["trainer_throughput_sps"] == pytest.approx(5 * 16 / total)
    # per group staleness [0,1,0,1], [1,1,0,1], [0,0,1,0], [1,1,1,2], [0,1,1,0]
    assert got["framework_staleness_mean"] == pytest.approx((0.5 + 0.75 + 0.25 + 1.25 + 0.5) / 5)
    assert got["framework_staleness_max_per_step"] == pytest.approx((1 + 1 + 1 + 2 + 1) / 5)
    assert got["framework_stale_group_fraction"] == pytest.approx((0.5 + 0.75 + 0.25 + 1 + 0.5) / 5)
    assert got["framework_staleness_violation_count"] == pytest.approx(1 / 5)
    assert got["framework_groups_dropped"] == pytest.approx((0 + 2 + 0 + 4 + 1) / 5)
    assert got["framework_keep_rate"] == pytest.approx((1 + 4 / 6 + 1 + 4 / 8 + 4 / 5) / 5)


def test_the_training_reward_and_the_evaluations_are_quality_rows() -> None:
    trace = get_adapter("skyrl").parse(ASYNC)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx([0.4 + 0.02 * i for i in range(6)])  # reward/avg_raw_reward
    for source in ("gsm8k", "all"):  # evaluate(): per data source, and over every source
        score = trace.of(f"quality.eval.{source}.avg_score").sort_values("step")
        assert list(zip(score["step"], score["value"], strict=True)) == [(3, 0.3125), (6, 0.4375)]
    assert list(trace.of("quality.eval.gsm8k.pass_at_4")["value"]) == [0.5, 0.5]


def test_the_wandb_folder_alone_is_recognised_without_adapter(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    _, named = ingest(ASYNC, "--adapter", "skyrl", "--store", tmp_path / "a")
    record, got = ingest(ASYNC / "wandb", "--store", tmp_path / "b")
    assert record["adapter"]["name"] == "skyrl"
    assert got == pytest.approx(named)


def test_a_synchronous_run_waits_while_it_generates(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(FIXTURES / "sync-3-steps", "--adapter", "skyrl", "--store", tmp_path)
    assert record["adapter"]["mode"] == "sync"
    assert got["trainer_idle_ratio"] == pytest.approx((6 + 7) / (16 + 17))
    assert got["trainer_compute_ratio"] == pytest.approx(2 * (2 + 6) / 33)  # fwd log-probs + policy training
    assert not any(name.startswith("framework_") for name in got)


def test_the_one_step_off_example_trainer_leaves_its_untimed_wait_in_other(
    ingest: Callable[..., tuple], tmp_path: Path
) -> None:
    record, got = ingest(FIXTURES / "one-step-off-3-steps", "--adapter", "skyrl", "--store", tmp_path)
    assert record["adapter"]["mode"] == "one_step_off"
    assert "trainer_idle_ratio" not in got  # generation is timed beside the step, the wait for it not at all
    assert got["step_time_mean_s"] == pytest.approx((10 + 11) / 2)
    assert got["trainer_compute_ratio"] == pytest.approx(2 * (2 + 6) / 21)
    assert got["trainer_other_ratio"] == pytest.approx((10 - 9.5 + 11 - 9.5 + 2 * 0.5) / 21)


def test_the_comparison_spec_renders_skyrls_own_command(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "skyrl.toml"), tmp_path)
    assert plan.cwd == "/workspace/SkyRL" and plan.env == {"WANDB_DIR": str(tmp_path)}
    assert plan.argv[:7] == ["uv", "run", "--isolated", "--extra", "megatron", "-m",
                             "examples.train.fully_async.main_fully_async"]  # fmt: skip
    overrides = dict(a.split("=", 1) for a in plan.argv[7:])
    expected = {
        "trainer.policy.model.path": "Qwen/Qwen3-30B-A3B", "trainer.train_batch_size": "64",
        "trainer.policy_mini_batch_size": "64", "generator.n_samples_per_prompt": "8",
        "generator.sampling_params.max_generate_length": "8192", "trainer.max_training_steps": "100",
        "trainer.max_prompt_length": "2048", "trainer.strategy": "megatron", "trainer.placement.colocate_all": "false",
        "trainer.placement.policy_num_nodes": "2", "trainer.placement.policy_num_gpus_per_node": "8",
        "trainer.placement.ref_num_nodes": "2", "trainer.placement.ref_num_gpus_per_node": "8",
        "generator.inference_engine.num_engines": "2", "generator.inference_engine.tensor_parallel_size": "8",
        "trainer.fully_async.enabled": "true", "trainer.fully_async.max_staleness_steps": "1",
        "trainer.fully_async.num_parallel_generation_workers": "128", "generator.batched": "false",
        "trainer.fully_async.sample_full_batch": "false", "data.train_data": "[/data/dapo-math-17k/train.parquet]",
    }  # fmt: skip
    assert {k: overrides[k] for k in expected} == expected
    assert overrides["trainer.policy.megatron_config.expert_model_parallel_size"] == "8"
    handoff = json.loads(plan.files["benchbed-plan.json"])
    assert (handoff["adapter"], handoff["mode"], handoff["samples_per_step"]) == ("skyrl", "fully_async", 512)


def test_a_synchronous_spec_uses_the_base_entrypoint_and_a_bad_placement_is_refused(tmp_path: Path) -> None:
    data = {"name": "s", "adapter": "skyrl", "workload": {"max_staleness": 0, "steps": 3},
            "resources": {"trainer_gpus": 8, "generator_gpus": 8, "colocated": True}}  # fmt: skip
    argv = ADAPTER.render(build_spec(data), tmp_path).argv
    assert argv[6] == "skyrl.train.entrypoints.main_base" and "trainer.placement.colocate_all=true" in argv
    assert not any(a.startswith("trainer.fully_async") for a in argv)
    data["resources"] = {"trainer_gpus": 12, "generator_gpus": 8, "gpus_per_node": 8}
    with pytest.raises(AdapterError, match="12 trainer GPUs .* make no placement"):
        ADAPTER.render(build_spec(data), tmp_path)


def test_the_fixtures_regenerate(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(FIXTURES / "make_fixtures.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    for run in ("fully-async-6-steps", "sync-3-steps", "one-step-off-3-steps"):
        mine, theirs = open_history(tmp_path / run / "wandb"), open_history(FIXTURES / run / "wandb")
        assert sorted(mine.keys) == sorted(theirs.keys), run  # W&B keeps keys in no fixed order
        columns = ["step", *sorted(theirs.keys)]
        assert mine.frame[columns].equals(theirs.frame[columns]), run


def test_every_rendered_key_is_one_the_framework_accepts(tmp_path: Path) -> None:
    """Keys from the framework's source at the cited commit (the adapter's upstream.json), read offline."""
    known = set(upstream_list(ROOT / "adapters" / "skyrl", "keys").names)
    specs = [load_spec(ROOT / "experiments" / "compare" / "skyrl.toml"),
             build_spec({"name": "s", "adapter": "skyrl", "workload": {"max_staleness": 0}})]  # fmt: skip
    for spec in specs:
        keys = [arg.split("=", 1)[0] for arg in ADAPTER.render(spec, tmp_path).argv[7:]]
        assert len(keys) > 15 and [k for k in keys if k not in known] == []
    assert "trainer.fully_async.max_stalenes_steps" not in known and "grpo.async_grpo.max_age" not in known
