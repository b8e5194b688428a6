"""Every rendered override set composes under verl 0.9.1's own Hydra config and passes its start-up checks.

Needs the `verl` extra (pip install torch==2.13.0 'benchbed[verl]'); `make test` installs it; without it the module is
skipped with that reason."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hydra", reason="the `verl` extra is not installed: pip install torch==2.13.0 'benchbed[verl]'")
pytest.importorskip("verl", reason="the `verl` extra is not installed: pip install torch==2.13.0 'benchbed[verl]'")
from benchbed.adapters.verl import VerlAdapter  # noqa: E402
from verl_compose import compose_argv  # noqa: E402  (tools/, on pytest's pythonpath)

from benchbed.errors import AdapterError  # noqa: E402
from benchbed.spec import build_spec, expand, load_spec  # noqa: E402

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"
ADAPTER = VerlAdapter()
MODES = {  # mode -> (colocated, max_staleness)
    "v1_sync": (True, 0),
    "v1_colocate_async": (True, 2),
    "v1_separate_async": (False, 2),
    "v0": (True, 0),
    "fully_async": (False, 1),
    "one_step_off": (False, 1),
}
MODELS = {  # preset -> (model, trainer GPUs)
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B", 16),
    "qwen3-235b-a22b": ("Qwen/Qwen3-235B-A22B-Instruct-2507", 32),
    "glm-4.5-air": ("zai-org/GLM-4.5-Air", 16),
    "none (fsdp)": ("Qwen/Qwen2.5-7B-Instruct", 8),
}


@pytest.mark.slow
@pytest.mark.parametrize("preset", list(MODELS))
@pytest.mark.parametrize("mode", list(MODES))
def test_rendered_plan_composes_under_verl(mode: str, preset: str, tmp_path: Path) -> None:
    colocated, staleness = MODES[mode]
    model, gpus = MODELS[preset]
    spec = build_spec(
        {
            "name": "compose",
            "adapter": "verl",
            "workload": {"model": model, "prompts_per_step": 32, "group_size": 8, "max_staleness": staleness,
                         "max_seq_len": 32768, "max_response_tokens": 16384},
            "resources": {"trainer_gpus": gpus, "generator_gpus": 16, "colocated": colocated},
            "verl": {"mode": mode, "concurrency": 256, "rollout_backend": "sglang" if mode == "v0" else "vllm"},
        }
    )  # fmt: skip
    cfg = compose_argv(ADAPTER.render(spec, tmp_path).argv)
    assert cfg["algorithm"]["adv_estimator"] == "grpo"
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == 8
    assert "file" in cfg["trainer"]["logger"]
    assert cfg["trainer"]["rollout_data_dir"] == str(tmp_path.resolve() / "rollout_data")
    expected_strategy = "fsdp" if preset.startswith("none") else "megatron"
    assert cfg["actor_rollout_ref"]["actor"]["strategy"].startswith(expected_strategy)
    if mode.startswith("v1_"):
        assert cfg["trainer"]["use_v1"] is True
        assert cfg["trainer"]["v1"]["trainer_mode"] == mode.removeprefix("v1_")
    if mode == "fully_async":
        assert cfg["async_training"]["staleness_threshold"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["verl-qwen3-30b-a3b-grpo.toml", "verl-case-study-3.toml"])
def test_experiment_specs_compose(name: str, tmp_path: Path) -> None:
    for spec in expand(load_spec(EXPERIMENTS / name)):
        cfg = compose_argv(ADAPTER.render(spec, tmp_path).argv)
        assert cfg["actor_rollout_ref"]["model"]["path"] == spec.workload.model


def test_unknown_and_invalid_keys_are_refused(tmp_path: Path) -> None:
    base = {"name": "bad", "adapter": "verl", "resources": {"trainer_gpus": 8, "colocated": True}}
    unknown = build_spec({**base, "verl": {"preset": "none", "overrides": {"trainer.no_such_key": 1}}})
    with pytest.raises(AdapterError, match="Could not override 'trainer.no_such_key'"):
        compose_argv(ADAPTER.render(unknown, tmp_path).argv)
    # with fixed micro-batches verl needs prompts x G to divide over the 8 trainer GPUs; 3 x 3 = 9 does not
    invalid = build_spec(
        {**base, "workload": {"prompts_per_step": 3, "group_size": 3},
         "verl": {"preset": "none", "overrides": {"actor_rollout_ref.actor.use_dynamic_bsz": False,
                                                  "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 1}}}
    )  # fmt: skip
    with pytest.raises(AdapterError, match=r"rejects the config: .*real_train_batch_size \(9\) must be divisible"):
        compose_argv(ADAPTER.render(invalid, tmp_path).argv)
