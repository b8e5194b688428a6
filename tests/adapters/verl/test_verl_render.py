"""render(): spec -> verl entry module, Hydra overrides and environment, per mode; spec errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchbed.adapters.verl import VerlAdapter
from benchbed.adapters.verl.render import preset_for

from benchbed.adapterkit.handoff import HANDOFF_FILE
from benchbed.errors import SpecError
from benchbed.spec import build_spec, expand, load_spec

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
ADAPTER = VerlAdapter()


def spec(mode: str | None = None, **changes: Any):
    data: dict[str, Any] = {
        "name": "t",
        "adapter": "verl",
        "workload": {"model": "Qwen/Qwen3-30B-A3B", "prompts_per_step": 32, "group_size": 8, "max_staleness": 0},
        "resources": {"trainer_gpus": 16, "generator_gpus": 8, "colocated": True},
        "verl": {} if mode is None else {"mode": mode},
    }
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return build_spec(data)


def overrides(plan) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in plan.argv[3:])


def test_v1_sync_plan_is_what_a_user_types(tmp_path: Path) -> None:
    plan = ADAPTER.render(spec("v1_sync"), tmp_path)
    assert plan.argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    ov = overrides(plan)
    assert ov["algorithm.adv_estimator"] == "grpo"
    assert ov["actor_rollout_ref.model.path"] == "Qwen/Qwen3-30B-A3B"
    assert ov["data.train_batch_size"] == "32"
    assert ov["actor_rollout_ref.rollout.n"] == "8"
    assert ov["trainer.use_v1"] == "true" and ov["trainer.v1.trainer_mode"] == "sync"
    assert ov["trainer.logger"] == "[console,file]"
    assert ov["trainer.rollout_data_dir"] == str(tmp_path.resolve() / "rollout_data")
    assert ov["trainer.nnodes"] == "2" and ov["trainer.n_gpus_per_node"] == "8"
    assert ov["model_engine"] == "megatron"  # the qwen3-30b-a3b preset was picked from the model name
    assert ov["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == "4"
    assert plan.env["VERL_FILE_LOGGER_PATH"] == str(tmp_path.resolve() / "metrics.jsonl")
    assert Path(plan.env["VERL_FILE_LOGGER_PATH"]).is_absolute()
    info = json.loads(plan.files[HANDOFF_FILE])
    assert info["mode"] == "v1_sync" and info["samples_per_step"] == 256


@pytest.mark.parametrize(
    ("mode", "entry", "staleness", "knob", "value"),
    [
        ("v1_colocate_async", "verl.trainer.main_ppo", 2, "trainer.v1.sampler.max_off_policy_threshold", "3"),
        ("v1_separate_async", "verl.trainer.main_ppo", 1, "trainer.v1.sampler.max_off_policy_threshold", "2"),
        ("fully_async", "verl.experimental.fully_async_policy.fully_async_main", 2,
         "async_training.staleness_threshold", "2.0"),
        ("one_step_off", "verl.experimental.one_step_off_policy.main_ppo", 1, None, None),
    ],
)  # fmt: skip
def test_async_modes_entry_and_staleness_knob(mode: str, entry: str, staleness: int, knob, value) -> None:
    colocated = mode == "v1_colocate_async"
    plan = ADAPTER.render(
        spec(mode, workload__max_staleness=staleness, resources__colocated=colocated), Path("/tmp/run")
    )
    assert plan.argv[2] == entry
    ov = overrides(plan)
    if knob:
        assert ov[knob] == value
    if mode in ("fully_async", "one_step_off"):
        assert ov["hydra.searchpath"] == "[pkg://verl.trainer.config]"
        assert ov["rollout.nnodes"] == "1" and ov["rollout.n_gpus_per_node"] == "8"
    if mode == "v1_separate_async":
        assert ov["actor_rollout_ref.rollout.n_gpus_per_node"] == "8"
        assert ov["actor_rollout_ref.rollout.checkpoint_engine.backend"] == "nccl"
        assert ov["trainer.v1.separate_async.parameter_sync_step"] == "1"


def test_fully_async_splits_the_step_into_sync_cycles() -> None:
    plan = ADAPTER.render(
        spec("fully_async", workload__max_staleness=1, resources__colocated=False, verl__trigger_parameter_sync_step=4),
        Path("/tmp/run"),
    )
    ov = overrides(plan)
    assert ov["actor_rollout_ref.actor.ppo_mini_batch_size"] == "8"
    assert ov["async_training.trigger_parameter_sync_step"] == "4"
    assert json.loads(plan.files[HANDOFF_FILE])["samples_per_local_step"] == 64


def test_concurrency_spreads_over_rollout_replicas() -> None:
    plan = ADAPTER.render(
        spec("fully_async", workload__max_staleness=1, resources__colocated=False, verl__concurrency=96),
        Path("/tmp/run"),
    )
    ov = overrides(plan)  # 8 generator GPUs / rollout TP 4 (preset) = 2 replicas
    assert ov["actor_rollout_ref.rollout.max_num_seqs"] == "48"
    assert ov["async_training.concurrent_samples_per_replica"] == "48"


def test_passthrough_overrides_come_last_and_win() -> None:
    plan = ADAPTER.render(
        spec("v1_sync", verl__overrides={"actor_rollout_ref.actor.optim.lr": 1e-6, "trainer.nnodes": 4}),
        Path("/tmp/run"),
    )
    assert plan.argv[-1] == "actor_rollout_ref.actor.optim.lr=1e-06"
    assert overrides(plan)["trainer.nnodes"] == "4"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"verl__mode": "v1_sync", "workload__max_staleness": 2}, "synchronous; set it to 0"),
        ({"verl__mode": "one_step_off", "workload__max_staleness": 3}, "exactly one version behind"),
        ({"verl__bogus": 1}, r"unknown field 'verl.bogus'"),
        ({"verl__mode": "fully_sync"}, r"field 'verl.mode'"),
        ({"verl__preset": "llama-405b"}, "preset 'llama-405b' is unknown"),
        ({"resources__trainer_gpus": 12}, "must be a multiple of gpus_per_node"),
        ({"resources__trainer_gpus": 4}, "TP x PP x CP = 8 does not divide"),
        ({"sandbox__backend": "modal"}, "set \\[verl\\] tool_config"),
        ({"workload__max_seq_len": 1000, "workload__max_response_tokens": 4096}, "must exceed max_response_tokens"),
    ],
)
def test_spec_errors_say_what_to_change(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        ADAPTER.render(spec(**changes), Path("/tmp/run"))


def test_presets_match_models_and_can_be_turned_off() -> None:
    assert preset_for("Qwen/Qwen3-235B-A22B-Instruct-2507", None).name == "qwen3-235b-a22b"
    assert preset_for("zai-org/GLM-4.5-Air", None).name == "glm-4.5-air"
    assert preset_for("Qwen/Qwen2.5-7B-Instruct", None) is None
    assert preset_for("Qwen/Qwen3-30B-A3B", "none") is None
    plan = ADAPTER.render(spec("v1_sync", verl__preset="none"), Path("/tmp/run"))
    assert "model_engine" not in overrides(plan)


def test_case_study_3_sweeps_rollout_concurrency() -> None:
    specs = expand(load_spec(EXPERIMENTS / "verl-case-study-3.toml"))
    assert [s.variant["verl.concurrency"] for s in specs] == [96, 256, 360, 960]
    per_replica = []
    for s in specs:
        ov = overrides(ADAPTER.render(s, Path("/tmp/run")))
        assert ov["actor_rollout_ref.model.path"] == "Qwen/Qwen3-235B-A22B-Instruct-2507"
        assert ov["actor_rollout_ref.rollout.n"] == "8"
        assert ov["actor_rollout_ref.rollout.max_model_len"] == "131072"
        assert ov["actor_rollout_ref.actor.megatron.context_parallel_size"] == "4"
        per_replica.append(int(ov["async_training.concurrent_samples_per_replica"]))
    assert per_replica == [16, 43, 60, 160]  # 24 rollout GPUs / TP4 = 6 replicas


def test_cpu_profile_plan_builds_its_model_then_runs_verl_on_the_cpu(tmp_path: Path) -> None:
    """experiments/verl-grpo-cpu.toml: the launcher in the run directory, the environment's python made absolute,
    the plug-in on every verl process's path, the tiny model and data set in the run directory."""
    plan = ADAPTER.render(load_spec(EXPERIMENTS / "verl-grpo-cpu.toml"), tmp_path)
    home = tmp_path.resolve() / "verl_cpu"
    assert plan.argv[:3] == [str(Path(".envs/verl-cpu/bin/python").absolute()), str(home / "launch.py"),
                             "verl.trainer.main_ppo"]  # fmt: skip
    assert plan.captures["pip-freeze.txt"][0] == plan.argv[0]
    ov = dict(arg.split("=", 1) for arg in plan.argv[3:])
    assert ov["actor_rollout_ref.model.path"] == str(home / "model")
    assert ov["data.train_files"] == ov["data.val_files"] == str(home / "train.parquet")
    assert ov["trainer.device"] == "cpu" and ov["trainer.n_gpus_per_node"] == "1" and ov["trainer.nnodes"] == "1"
    assert ov["+ray_kwargs.ray_init.num_gpus"] == "1" and ov["ray_kwargs.ray_init.num_cpus"] == "16"
    assert ov["+actor_rollout_ref.rollout.enable_sleep_mode"] == "false"
    assert ov["actor_rollout_ref.rollout.load_format"] == "auto"
    assert ov["reward.custom_reward_function.path"] == str(home / "reward.py")
    assert "custom_reward_function.path" not in ov  # the top-level key, which verl 0.9.1 ignores
    assert ov["trainer.total_training_steps"] == "3" and ov["data.train_batch_size"] == "2"
    assert plan.env["PYTHONPATH"] == str(home)
    assert plan.env["VERL_USE_EXTERNAL_MODULES"] == "benchbed_verl_cpu" and plan.env["VERL_PLATFORM"] == "cpu"
    assert plan.env["VLLM_SERVER_DEV_MODE"] == "1" and plan.env["VLLM_TARGET_DEVICE"] == "cpu"
    names = {"verl_cpu/benchbed_verl_cpu.py", "verl_cpu/launch.py", "verl_cpu/reward.py", "verl_cpu/setup.json"}
    assert names <= set(plan.files)
    setup = json.loads(plan.files["verl_cpu/setup.json"])
    assert setup["prompts"] == 6  # 2 prompts per step x 3 steps: one pass over the data set
    assert setup["model"]["arch"] == "qwen3" and setup["model"]["hidden"] // setup["model"]["heads"] == 32
    assert json.loads(plan.files[HANDOFF_FILE])["profile"] == "cpu"


def test_cpu_profile_spec_overrides_win_and_a_bare_python_stays_on_path(tmp_path: Path) -> None:
    s = spec("v1_sync", verl__profile="cpu", verl__python="python3", resources__trainer_gpus=0,
             verl__overrides={"ray_kwargs.ray_init.num_cpus": 4})  # fmt: skip
    plan = ADAPTER.render(s, tmp_path)
    assert plan.argv[0] == "python3"
    assert overrides(plan)["ray_kwargs.ray_init.num_cpus"] == "4"
    assert "model_engine" not in overrides(plan)  # the Megatron preset the model name matches is not applied


@pytest.mark.parametrize("mode", ["v1_separate_async", "fully_async", "one_step_off", "v0"])
def test_cpu_profile_refuses_modes_that_are_not_colocated_v1(mode: str, tmp_path: Path) -> None:
    with pytest.raises(
        SpecError, match=f"profile='cpu' runs the colocated modes v1_sync, v1_colocate_async .*got '{mode}'"
    ):
        ADAPTER.render(spec(mode, verl__profile="cpu", workload__max_staleness=1), tmp_path)


def test_cpu_model_head_size_must_be_one_vllm_cpu_attention_takes() -> None:
    with pytest.raises(SpecError, match="verl.cpu_model.: the head size hidden/heads = 16 is not one vLLM"):
        spec("v1_sync", verl__profile="cpu", verl__cpu_model={"hidden": 64, "heads": 4})


def test_cpu_profile_refuses_megatron(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="profile='cpu' trains with FSDP"):
        ADAPTER.render(spec("v1_sync", verl__profile="cpu", verl__preset="qwen3-30b-a3b"), tmp_path)


def test_cpu_launcher_drops_the_ray_counts_only_on_a_running_cluster() -> None:
    """verl_cpu/launch.py: Ray refuses CPU and GPU counts from a driver joining a cluster (a Ray job)."""
    from benchbed.adapters.verl.cpu.launch import verl_args

    argv = ["verl.trainer.main_ppo", "ray_kwargs.ray_init.num_cpus=16", "+ray_kwargs.ray_init.num_gpus=1",
            "ray_kwargs.ray_init.runtime_env.py_executable=/env/bin/python", "trainer.device=cpu"]  # fmt: skip
    assert verl_args(argv, None) == argv
    assert verl_args(argv, "") == argv
    assert verl_args(argv, "127.0.0.1:6379") == [argv[0], *argv[3:]]


def test_cpu_reward_is_one_when_the_response_starts_with_the_sum() -> None:
    from benchbed.adapters.verl.cpu.reward import compute_score

    assert compute_score("benchbed/arith", "19<eos>", "19") == 1.0
    assert compute_score("benchbed/arith", " 19", "19") == 1.0
    assert compute_score("benchbed/arith", "1", "19") == 0.0
    assert compute_score("benchbed/arith", "91", "19") == 0.0


def test_cpu_moe_experiment_builds_a_qwen3_moe(tmp_path: Path) -> None:
    plan = ADAPTER.render(load_spec(EXPERIMENTS / "verl-grpo-cpu-moe.toml"), tmp_path)
    model = json.loads(plan.files["verl_cpu/setup.json"])["model"]
    assert (model["arch"], model["experts"], model["top_k"]) == ("qwen3_moe", 4, 2)
