"""The rLLM adapter: its W&B offline fixtures (README.md beside them says what is imitated) ingested through the CLI,
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
from benchbed.spec import build_spec, load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "rllm"
ASYNC = FIXTURES / "fully-async-6-steps"
ADAPTER = get_adapter("rllm")
# steps 2..6: time/step = buffer wait + 2 x 3 forward-backward + 1 optimizer + 2 weight sync + 0.5 untimed, and the
# 5 s validations after steps 3 and 6 (time/testing, after the step's timer)
WAIT = [1.5, 0.5, 4, 2, 1]
WINDOW_STEPS = [w + 9.5 + (5 if step in (3, 6) else 0) for step, w in zip(range(2, 7), WAIT, strict=True)]


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    package = ROOT / "adapters" / "rllm"
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_a_fully_async_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(ASYNC, "--adapter", "rllm", "--store", tmp_path)
    total = sum(WINDOW_STEPS)
    assert record["adapter"] == {"name": "rllm", "framework": "rllm", "version": "9beb6e0", "mode": "fully_async"}
    assert total == 66.5 and got["step_time_mean_s"] == pytest.approx(total / 5)
    assert got["trainer_idle_ratio"] == pytest.approx(sum(WAIT) / total)  # time/buffer_wait
    assert got["trainer_compute_ratio"] == pytest.approx(5 * (6 + 1) / total)  # forward_backward + optim_step
    assert got["trainer_weight_sync_ratio"] == pytest.approx(5 * 2 / total)
    assert got["trainer_other_ratio"] == pytest.approx((5 * 0.5 + 2 * 5) / total)  # the rest and validation
    # rLLM's own ratio is buffer_wait / time/step per step (validation not in it), averaged here
    own = [w / (w + 9.5) for w in WAIT]
    assert got["framework_trainer_idle_ratio"] == pytest.approx(sum(own) / 5)
    # per group staleness [0,1,1,0], [1,1,0,1], [0,0,0,1], [1,1,1,1], [0,1,0,0]
    assert got["framework_staleness_mean"] == pytest.approx((0.5 + 0.75 + 0.25 + 1 + 0.25) / 5)
    assert got["framework_staleness_max_per_step"] == pytest.approx(1.0)
    assert got["framework_groups_dropped_zero_adv"] == pytest.approx((0 + 2 + 0 + 0 + 1) / 5)


def test_the_reward_and_the_validations_are_quality_rows_without_the_one_before_training() -> None:
    trace = ADAPTER.parse(ASYNC)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx([0.2 + 0.05 * i for i in range(6)])  # reward/default_traj_name/mean
    passed = trace.of("quality.eval.countdown.pass_at_1").sort_values("step")
    assert list(zip(passed["step"], passed["value"], strict=True)) == [(3, 0.3), (6, 0.45)]  # step 0's 0.2 left out
    assert trace.events["step"].min() == 1


def test_the_wandb_folders_alone_are_recognised_without_adapter(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    _, named = ingest(ASYNC, "--adapter", "rllm", "--store", tmp_path / "a")
    record, got = ingest(ASYNC / "wandb", "--store", tmp_path / "b")
    assert record["adapter"]["name"] == "rllm"
    assert got == pytest.approx(named)
    record, _ = ingest(FIXTURES / "on-policy-3-steps" / "wandb", "--store", tmp_path / "c")
    assert record["adapter"]["name"] == "rllm"  # by batch/termination_reason/*, not prime-rl's time/forward_backward


def test_an_on_policy_run_leaves_its_untimed_generation_in_other(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(FIXTURES / "on-policy-3-steps", "--adapter", "rllm", "--store", tmp_path)
    assert record["adapter"]["mode"] == "on_policy"
    assert "trainer_idle_ratio" not in got  # generation runs inside the step timer, untimed
    total = (18 + 2) + (19 + 2)  # the step timer, and the sampler save after it
    assert got["step_time_mean_s"] == pytest.approx(total / 2)
    assert got["trainer_compute_ratio"] == pytest.approx(2 * (6 + 1) / total)
    assert got["trainer_weight_sync_ratio"] == pytest.approx(2 * 2 / total)  # time/save_checkpoint
    assert got["trainer_other_ratio"] == pytest.approx((18 - 7 + 19 - 7) / total)


def test_the_comparison_spec_renders_rllms_own_command(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "rllm.toml"), tmp_path)
    assert plan.cwd == "/workspace/rllm" and plan.env == {"WANDB_DIR": str(tmp_path)}
    assert plan.argv[:4] == ["python", "-m", "examples.countdown.unified_trainer.train_countdown_unified_tinker",
                             "rllm/backend=tinker"]  # fmt: skip
    overrides = dict(a.split("=", 1) for a in plan.argv[4:])
    expected = {
        "model.name": "Qwen/Qwen3-30B-A3B", "training.group_size": "8", "data.max_response_length": "8192",
        "data.max_prompt_length": "2048", "data.train_batch_size": "1", "rllm.trainer.total_batches": "100",
        "rllm.trainer.logger": "[wandb]", "rllm.async_training.enable": "true",
        "rllm.async_training.mini_batch_size": "64", "rllm.async_training.staleness_threshold": "1",
        "rllm.async_training.fwd_bwd_group_size": "16", "rllm.workflow.raise_on_error": "false",
        "training.default_local_dir": str(tmp_path / "checkpoints"), "rllm.algorithm.adv_estimator": "grpo",
    }  # fmt: skip
    assert {k: overrides[k] for k in expected} == expected
    handoff = json.loads(plan.files["benchbed-plan.json"])
    assert (handoff["adapter"], handoff["mode"], handoff["samples_per_step"]) == ("rllm", "fully_async", 512)


def test_a_synchronous_spec_renders_the_on_policy_trainer(tmp_path: Path) -> None:
    spec = build_spec({"name": "s", "adapter": "rllm", "workload": {"max_staleness": 0, "prompts_per_step": 32}})
    overrides = dict(a.split("=", 1) for a in ADAPTER.render(spec, tmp_path).argv[4:])
    assert overrides["rllm.async_training.enable"] == "false" and overrides["data.train_batch_size"] == "32"
    assert not [k for k in overrides if k.startswith("rllm.async_training.") and k != "rllm.async_training.enable"]


def test_the_fixtures_regenerate(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(FIXTURES / "make_fixtures.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    for run in ("fully-async-6-steps", "on-policy-3-steps"):
        mine, theirs = open_history(tmp_path / run / "wandb"), open_history(FIXTURES / run / "wandb")
        assert sorted(mine.keys) == sorted(theirs.keys), run  # W&B keeps keys in no fixed order
        columns = ["step", *sorted(theirs.keys)]
        assert mine.frame[columns].equals(theirs.frame[columns]), run


def test_every_rendered_key_is_one_rllms_config_holds(tmp_path: Path) -> None:
    """Keys of rLLM's base and Tinker backend configs at the cited commit (the adapter's upstream.json)."""
    known = set(upstream_list(ROOT / "adapters" / "rllm", "keys").names)
    specs = [load_spec(ROOT / "experiments" / "compare" / "rllm.toml"),
             build_spec({"name": "s", "adapter": "rllm", "workload": {"max_staleness": 0}})]  # fmt: skip
    for spec in specs:
        keys = [arg.split("=", 1)[0] for arg in ADAPTER.render(spec, tmp_path).argv[4:]]
        assert len(keys) > 10 and [k for k in keys if k not in known] == []
    assert "rllm.async_training.max_staleness" not in known and "rllm.trainer.total_steps" not in known
