"""The open-instruct adapter: its W&B offline fixture (README.md beside it says what is imitated) ingested through the
CLI, with and without --adapter, to figures worked out by hand; its own command rendered from a spec."""

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
FIXTURES = ROOT / "tests" / "fixtures" / "open_instruct"
RUN = FIXTURES / "async-6-steps"
ADAPTER = get_adapter("open_instruct")
# steps 2..6: time/total = health check 2 + training (wait for data + 10) + saving (5 at step 4) + 0.5 untimed
WAIT = [2, 0.5, 3, 1, 1.5]
WINDOW_STEPS = [2 + w + 10 + 0.5 for w in WAIT]
WINDOW_STEPS[2] += 5


def test_the_adapter_is_a_key_map_and_at_most_150_lines_of_python() -> None:
    package = ROOT / "adapters" / "open_instruct"
    assert sum(len(p.read_text().splitlines()) for p in package.glob("*.py")) <= 150


def test_the_run_ingests_to_the_hand_computed_figures(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    record, got = ingest(RUN, "--adapter", "open_instruct", "--store", tmp_path)
    total = sum(WINDOW_STEPS)
    assert record["adapter"] == {"name": "open_instruct", "framework": "open_instruct", "version": "e6c3044",
                                 "mode": "async"}  # fmt: skip
    assert total == 75.5 and got["step_time_mean_s"] == pytest.approx(total / 5)
    assert got["trainer_idle_ratio"] == pytest.approx(sum(WAIT) / total)  # trainer_waiting_for_data
    assert got["trainer_compute_ratio"] == pytest.approx(5 * 10 / total)  # time/training less the wait in it
    assert got["trainer_checkpoint_ratio"] == pytest.approx(5 / total)
    assert got["trainer_other_ratio"] == pytest.approx(5 * (2 + 0.5) / total)  # health check and the untimed rest
    assert got["generator_paused_ratio"] == pytest.approx((0 + 4 + 1 + 6 + 2) / total)  # waiting for the trainer
    assert got["framework_staleness_mean"] == pytest.approx((1 + 0.5 + 1 + 0.75 + 1) / 5)  # num_steps_off_policy
    assert got["framework_stale_groups_dropped"] == pytest.approx(1 / 5)
    assert "trainer_weight_sync_ratio" not in got  # time/weight_sync overlaps the next step: kept native


def test_the_training_scores_and_the_evaluations_are_quality_rows() -> None:
    trace = ADAPTER.parse(RUN)
    reward = trace.of("quality.reward_mean").sort_values("step")
    assert list(reward["value"]) == pytest.approx([0.25 + 0.05 * i for i in range(6)])  # `scores`
    scores = trace.of("quality.eval.scores").sort_values("step")
    assert list(zip(scores["step"], scores["value"], strict=True)) == [(2, 0.375), (4, 0.5)]
    assert list(trace.of("quality.eval.pass_at_4")["value"]) == [0.75, 0.75]
    zero = trace.of("groups.zero_adv").sort_values("step")
    assert list(zero["value"]) == [1, 0, 2, 0, 1, 0]  # batch/filtered_prompts


def test_the_wandb_folder_alone_is_recognised_without_adapter(ingest: Callable[..., tuple], tmp_path: Path) -> None:
    _, named = ingest(RUN, "--adapter", "open_instruct", "--store", tmp_path / "a")
    record, got = ingest(RUN / "wandb", "--store", tmp_path / "b")
    assert record["adapter"]["name"] == "open_instruct"
    assert got == pytest.approx(named)


def test_the_comparison_spec_renders_grpo_fast_with_its_flags(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(ROOT / "experiments" / "compare" / "open_instruct.toml"), tmp_path)
    assert plan.cwd == "/workspace/open-instruct" and plan.env == {"WANDB_DIR": str(tmp_path)}
    assert plan.argv[:4] == ["uv", "run", "python", "open_instruct/grpo_fast.py"]
    args = " ".join(plan.argv[4:])
    for flag in ("--model_name_or_path Qwen/Qwen3-30B-A3B", "--num_unique_prompts_rollout 64",
                 "--num_samples_per_prompt_rollout 8", "--response_length 8192", "--max_prompt_token_length 2048",
                 "--pack_length 10240", "--total_episodes 51200", "--async_steps 1", "--num_learners_per_node 8 8",
                 "--vllm_num_engines 2", "--vllm_tensor_parallel_size 8", "--with_tracking true",
                 f"--output_dir {tmp_path / 'output'}",
                 "--dataset_mixer_list ai2-adapt-dev/rlvr_gsm8k_zs 1.0 --deepspeed_stage 3"):  # fmt: skip
        assert flag in args, flag
    handoff = json.loads(plan.files["benchbed-plan.json"])
    assert (handoff["adapter"], handoff["mode"], handoff["samples_per_step"]) == ("open_instruct", "async", 512)


def test_synchronous_and_colocated_specs_are_refused(tmp_path: Path) -> None:
    data = {"name": "s", "adapter": "open_instruct", "workload": {"max_staleness": 0}}
    with pytest.raises(AdapterError, match="asynchronous only"):
        ADAPTER.render(build_spec(data), tmp_path)
    data = {"name": "s", "adapter": "open_instruct", "workload": {"max_staleness": 2},
            "resources": {"trainer_gpus": 8, "generator_gpus": 8, "colocated": True}}  # fmt: skip
    with pytest.raises(AdapterError, match=r"\(colocated\) at tensor parallel 1 make no placement"):
        ADAPTER.render(build_spec(data), tmp_path)
    data["resources"] = {"trainer_gpus": 12, "generator_gpus": 2, "gpus_per_node": 8}
    argv = ADAPTER.render(build_spec(data), tmp_path).argv
    at = argv.index("--num_learners_per_node")
    assert argv[at + 1 : at + 4] == ["8", "4", "--vllm_num_engines"]


def test_the_fixture_regenerates(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(FIXTURES / "make_fixtures.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    mine, theirs = open_history(tmp_path / RUN.name / "wandb"), open_history(RUN / "wandb")
    assert sorted(mine.keys) == sorted(theirs.keys)  # W&B keeps keys in no fixed order
    columns = ["step", *sorted(theirs.keys)]
    assert mine.frame[columns].equals(theirs.frame[columns])


def test_every_rendered_flag_is_one_grpo_fast_accepts(tmp_path: Path) -> None:
    """Fields of the dataclasses grpo_fast.py parses, at the cited commit (the adapter's upstream.json)."""
    known = set(upstream_list(ROOT / "adapters" / "open_instruct", "keys").names)
    data = {"name": "s", "adapter": "open_instruct", "workload": {"max_staleness": 1},
            "open_instruct": {"dataset_mixer_list": ["d", "1.0"]}}  # fmt: skip
    for spec in (load_spec(ROOT / "experiments" / "compare" / "open_instruct.toml"), build_spec(data)):
        flags = [arg[2:] for arg in ADAPTER.render(spec, tmp_path).argv if arg.startswith("--")]
        assert len(flags) > 15 and [f for f in flags if f not in known] == []
    assert "async_step" not in known and "num_learners" not in known
