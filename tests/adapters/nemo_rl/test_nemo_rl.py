"""The NeMo-RL adapter: its TensorBoard fixtures (README.md beside them says what is imitated) ingested through the CLI,
with and without --adapter, to figures worked out by hand; its own command rendered from a spec."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from benchbed.adapters.nemo_rl.parse import per_step

from benchbed.adapter import get_adapter
from benchbed.adapterkit.upstream import upstream_list
from benchbed.errors import AdapterError
from benchbed.spec import build_spec, load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "nemo_rl"
ASYNC = FIXTURES / "async-6-steps"
ADAPTER = get_adapter("nemo_rl")
WINDOW_STEPS = [19.5, 25.5, 18.5, 21.5, 27.5]  # steps 2..6: exposed generation + 17.5 s + validation/checkpoint


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    package = ROOT / "adapters" / "nemo_rl"
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_an_async_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(ASYNC, "--adapter", "nemo_rl", "--store", tmp_path)
    total = sum(WINDOW_STEPS)
    assert record["adapter"] == {"name": "nemo_rl", "framework": "nemo_rl", "version": "0.6.0", "mode": "async"}
    assert got["step_time_mean_s"] == pytest.approx(total / 5)
    assert got["trainer_idle_ratio"] == pytest.approx((2 + 3 + 1 + 4 + 2) / total)  # exposed_generation
    assert got["trainer_compute_ratio"] == pytest.approx(5 * (4 + 10) / total)
    assert got["trainer_weight_sync_ratio"] == pytest.approx(5 * 2 / total)
    assert got["trainer_checkpoint_ratio"] == pytest.approx(3 / total)
    assert got["trainer_throughput_sps"] == pytest.approx(5 * 16 / total)
    assert got["framework_staleness_mean"] == pytest.approx((0.75 + 1 + 0.5 + 1 + 0.75) / 5)
    assert got["framework_buffer_starvation_s"] == pytest.approx((1.5 + 2.5 + 0.5 + 3.5 + 1.5) / 5)
    assert got["framework_refit_bubble_s"] == pytest.approx(0.5 + 2)
    assert got["framework_validation_s"] == pytest.approx(10 / 5)
    assert got["framework_total_waste_s"] == pytest.approx((4 + 10 + 3 + 6 + 9) / 5)
    walls = 30 + np.cumsum([29.5, *WINDOW_STEPS])[1:]  # start-up + steps so far
    waste = np.array([4.0, 10.0, 3.0, 6.0, 9.0])
    assert got["framework_efficiency_ratio"] == pytest.approx(float(np.mean((walls - waste) / walls)), rel=1e-6)
    # collector thread-seconds: running totals 0,4,10,18,20,30 etc. taken as per-step increments
    assert got["framework_buffer_full_backoff_thread_s"] == pytest.approx((4 + 6 + 8 + 2 + 10) / 5)
    assert got["framework_generation_limit_pause_thread_s"] == pytest.approx(2 / 5)
    assert got["framework_refit_event_wait_thread_s"] == pytest.approx(2.0)
    assert got["framework_failed_trajectory_thread_s"] == pytest.approx(3 / 5)


def test_the_tensorboard_folder_alone_is_recognised_without_adapter(
    ingest: Callable[..., tuple], tmp_path: Path
) -> None:
    _, named = ingest(ASYNC, "--adapter", "nemo_rl", "--store", tmp_path / "a")
    record, got = ingest(ASYNC / "logs" / "exp_001" / "tensorboard", "--store", tmp_path / "b")
    assert record["adapter"]["name"] == "nemo_rl"
    assert got == pytest.approx(named)


def test_a_synchronous_run_waits_while_it_generates(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(FIXTURES / "sync-3-steps", "--adapter", "nemo_rl", "--store", tmp_path)
    assert record["adapter"]["mode"] == "sync"
    assert got["trainer_idle_ratio"] == pytest.approx((5 + 7) / (16.5 + 18.5))
    assert got["trainer_compute_ratio"] == pytest.approx(2 * 10 / 35)
    assert got["trainer_weight_sync_ratio"] == pytest.approx(2 * 0.75 / 35)  # the refit inside prepare_for_generation
    assert not any(name.startswith("framework_") for name in got)


def test_a_running_total_becomes_increments_and_a_restart_starts_over() -> None:
    got = per_step(np.array([2.0, np.nan, 5.0, 1.0, 4.0]))
    assert np.isnan(got[1]) and list(got[[0, 2, 3, 4]]) == [2.0, 3.0, 1.0, 3.0]


def test_the_comparison_spec_renders_nemo_rls_own_command(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "nemo_rl.toml"), tmp_path)
    assert plan.cwd == "/opt/nemo-rl"
    recipe = "examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g-async-1off.yaml"
    assert plan.argv[:6] == ["uv", "run", "python", "examples/run_grpo.py", "--config", recipe]
    overrides = dict(a.split("=", 1) for a in plan.argv[6:])
    assert overrides == {
        "policy.model_name": "Qwen/Qwen3-30B-A3B", "grpo.num_prompts_per_step": "64",
        "grpo.num_generations_per_prompt": "8", "grpo.max_num_steps": "100", "policy.train_global_batch_size": "512",
        "policy.generation.max_new_tokens": "8192", "policy.max_total_sequence_length": "10240",
        "grpo.val_period": "0", "checkpointing.enabled": "true", "checkpointing.save_period": "50",
        "checkpointing.checkpoint_dir": str(tmp_path / "checkpoints"), "logger.log_dir": str(tmp_path / "logs"),
        "logger.tensorboard_enabled": "true", "grpo.async_grpo.enabled": "true",
        "grpo.async_grpo.max_trajectory_age_steps": "1", "policy.generation.vllm_cfg.async_engine": "true",
        "loss_fn.use_importance_sampling_correction": "true", "policy.generation.colocated.enabled": "false",
        "cluster.num_nodes": "4", "cluster.gpus_per_node": "8", "policy.generation.colocated.resources.num_nodes": "2",
        "policy.generation.colocated.resources.gpus_per_node": "8",
    }  # fmt: skip


def test_a_synchronous_colocated_spec_and_a_split_node_refusal(tmp_path: Path) -> None:
    data = {"name": "n", "adapter": "nemo_rl", "workload": {"max_staleness": 0, "steps": 3},
            "resources": {"trainer_gpus": 8, "generator_gpus": 8, "colocated": True},
            "nemo_rl": {"overrides": ["policy.dtensor_cfg.enabled=false"]}}  # fmt: skip
    argv = ADAPTER.render(build_spec(data), tmp_path).argv
    assert "grpo.async_grpo.enabled=true" not in argv and argv[-1] == "policy.dtensor_cfg.enabled=false"
    assert {"policy.generation.colocated.enabled=true", "cluster.num_nodes=1", "cluster.gpus_per_node=8"} <= set(argv)
    data["resources"] = {"trainer_gpus": 12, "generator_gpus": 4, "gpus_per_node": 8, "colocated": False}
    with pytest.raises(AdapterError, match="both must be multiples of gpus_per_node"):
        ADAPTER.render(build_spec(data), tmp_path)


def test_the_fixtures_regenerate(tmp_path: Path, fixture_generator) -> None:
    from benchbed.adapterkit.histories.tensorboard import read_event_file

    fixture_generator("nemo_rl/make_fixtures.py").main(tmp_path)
    for run in ("async-6-steps", "sync-3-steps"):
        (mine,) = (tmp_path / run).rglob("events.out.tfevents*")
        (theirs,) = (FIXTURES / run).rglob("events.out.tfevents*")
        assert read_event_file(mine) == read_event_file(theirs), run


def test_every_rendered_key_is_one_the_framework_accepts(tmp_path: Path) -> None:
    """Keys from the framework's source at the cited commit (the adapter's upstream.json), read offline."""
    known = set(upstream_list(ROOT / "adapters" / "nemo_rl", "keys").names)
    specs = [load_spec(ROOT / "experiments" / "compare" / "nemo_rl.toml"),
             build_spec({"name": "s", "adapter": "nemo_rl", "workload": {"max_staleness": 0}})]  # fmt: skip
    for spec in specs:
        keys = [arg.split("=", 1)[0] for arg in ADAPTER.render(spec, tmp_path).argv[6:]]
        assert len(keys) > 15 and [k for k in keys if k not in known] == []
    assert "trainer.fully_async.max_stalenes_steps" not in known and "grpo.async_grpo.max_age" not in known
