"""Rendering specs into slime launches, checked against the argument names of the pinned slime commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter
from benchbed.adapters.slime.render import argument_names, model_args, model_table, unknown_arguments
from benchbed.adapters.slime.runargs import from_argv

from benchbed.adapterkit.handoff import HANDOFF_FILE
from benchbed.adapterkit.upstream import load_snapshot
from benchbed.errors import SpecError
from benchbed.spec import build_spec, load_spec

ROOT = Path(__file__).parents[3]
VERSIONS = ("624b824", "v0.3.1")


def spec(**over: object):
    data: dict = {
        "name": "t",
        "adapter": "slime",
        "workload": {"model": "Qwen/Qwen3-30B-A3B", "prompts_per_step": 32, "group_size": 8, "steps": 5,
                     "max_response_tokens": 8192},
        "resources": {"trainer_gpus": 16, "generator_gpus": 8, "colocated": False},
        "slime": {},
    }  # fmt: skip
    for key, value in over.items():
        section, field = key.split("__")
        data[section][field] = value
    return build_spec(data)


def submitted(plan) -> tuple[dict, list[str]]:
    """(runtime env, train argv) from a `ray job submit ... -- python3 ...` argv."""
    argv = plan.argv
    assert argv[:5] == ["ray", "job", "submit", "--address", "http://127.0.0.1:8265"]
    assert argv[5] == "--runtime-env-json"
    sep = argv.index("--")
    return json.loads(argv[6]), argv[sep + 1 :]


def option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_argument_names_cover_both_pinned_commits() -> None:
    lists = load_snapshot(ROOT / "adapters" / "slime" / "upstream.json")
    assert set(lists) == {f"slime {v}" for v in VERSIONS} | {"megatron"}
    assert lists["slime v0.3.1"].source.startswith("THUDM/slime@a6272da0d")
    assert lists["slime 624b824"].source.startswith("THUDM/slime@624b824a8")
    for version in VERSIONS:
        assert {"--colocate", "--partial-rollout", "--debug-rollout-only", "--load-debug-rollout-data",
                "--update-weights-interval"} <= argument_names(version)  # fmt: skip
    assert "--num-layers" in lists["megatron"].names and "--colocate" not in lists["megatron"].names
    assert unknown_arguments(["python3", "train.py", "--colocate", "--num-layers", "4", "--sglang-dp-size", "2",
                              "--colocat"], "624b824") == ["--colocat"]  # fmt: skip


@pytest.mark.parametrize("name", sorted(model_table()))
@pytest.mark.parametrize("version", VERSIONS)
def test_model_architecture_args_are_known_to_megatron_and_slime(name: str, version: str) -> None:
    assert unknown_arguments(model_table()[name].values["args"], version) == []


def test_models_match_by_name_and_carry_upstream_shapes() -> None:
    name, args = model_args("Qwen/Qwen3-235B-A22B-Thinking-2507-FP8")
    assert name == "qwen3-235B-A22B" and option(args, "--num-layers") == "94" and option(args, "--num-experts") == "128"
    assert option(model_args("zai-org/GLM-4.5")[1], "--moe-layer-freq") == "[0]*3+[1]*89"
    assert option(model_args("zai-org/GLM-5-744B-A40B")[1], "--num-layers") == "78"
    assert option(model_args("Qwen/Qwen3-30B-A3B")[1], "--moe-ffn-hidden-size") == "768"
    assert model_args("meta-llama/Llama-3-8B") == ("", [])


@pytest.mark.parametrize("version", VERSIONS)
def test_sync_disaggregated_render(tmp_path: Path, version: str) -> None:
    plan = SlimeAdapter().render(spec(slime__slime_version=version), tmp_path / "run")
    env, argv = submitted(plan)
    assert argv[:2] == ["python3", "/root/slime/train.py"]
    assert env["env_vars"]["TENSORBOARD_DIR"] == str((tmp_path / "run" / "tensorboard").resolve())
    assert Path(env["env_vars"]["TENSORBOARD_DIR"]).is_absolute()
    assert (option(argv, "--actor-num-nodes"), option(argv, "--actor-num-gpus-per-node")) == ("2", "8")
    assert option(argv, "--rollout-num-gpus") == "8" and "--colocate" not in argv
    assert (option(argv, "--rollout-batch-size"), option(argv, "--n-samples-per-prompt")) == ("32", "8")
    assert option(argv, "--global-batch-size") == "256" and option(argv, "--rollout-max-response-len") == "8192"
    assert "--use-tensorboard" in argv and "--update-weights-interval" not in argv
    assert option(argv, "--save-debug-rollout-data").endswith("run/rollout_dumps/rollout_{rollout_id}.pt")
    assert unknown_arguments(argv, version) == []
    manifest = json.loads(plan.files[HANDOFF_FILE])
    assert manifest["argv"] == argv and plan.cwd == "/root/slime"
    parsed = from_argv(manifest["argv"], "m")
    assert (parsed.train_script, parsed.colocate, parsed.rollout_batch_size) == ("train.py", False, 32)


def test_fully_async_partial_rollout_render(tmp_path: Path) -> None:
    plan = SlimeAdapter().render(
        spec(
            slime__mode="fully_async",
            slime__partial_rollout=True,
            slime__update_weights_interval=5,
            slime__over_sampling_batch_size=48,
        ),  # fmt: skip
        tmp_path,
    )
    _, argv = submitted(plan)
    assert argv[1] == "/root/slime/train_async.py"
    assert option(argv, "--rollout-function-path") == "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
    assert "--partial-rollout" in argv and option(argv, "--update-weights-interval") == "5"
    assert option(argv, "--over-sampling-batch-size") == "48"


def test_colocated_and_staleness_default_modes(tmp_path: Path) -> None:
    _, argv = submitted(SlimeAdapter().render(spec(resources__colocated=True), tmp_path))
    assert "--colocate" in argv and "--rollout-num-gpus" not in argv and argv[1] == "/root/slime/train.py"
    _, argv = submitted(SlimeAdapter().render(spec(workload__max_staleness=1), tmp_path))
    assert argv[1] == "/root/slime/train_async.py" and option(argv, "--update-weights-interval") == "1"
    _, argv = submitted(SlimeAdapter().render(spec(workload__max_staleness=3), tmp_path))
    assert option(argv, "--update-weights-interval") == "3"  # pushes every 3 steps bound staleness by 3


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"resources__colocated": True, "slime__mode": "one_step_off"}, "train_async.py refuses --colocate"),
        (
            {"slime__args": ["--colocat"]},
            r"unknown to slime 624b824 / Megatron-LM: --colocat \(did you mean --colocate",
        ),
        ({"slime__bogus": 1}, r"unknown field 'slime.bogus'"),
        ({"slime__env": {"WANDB_API_KEY": "x"}}, "secrets must come from the environment the run inherits"),
        ({"workload__model": "meta-llama/Llama-3-8B"}, "no Megatron architecture arguments"),
        ({"resources__trainer_gpus": 12}, "not a multiple of resources.gpus_per_node"),
        ({"slime__over_sampling_batch_size": 4}, "must be >= workload.prompts_per_step"),
    ],
)
def test_render_refuses_bad_specs(tmp_path: Path, over: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        SlimeAdapter().render(spec(**over), tmp_path)


def test_trainer_only_benchmark_dumps_once_then_replays(tmp_path: Path) -> None:
    plan = SlimeAdapter().render(spec(slime__benchmark="trainer_only", slime__trainer_only_rollouts=2), tmp_path)
    script = plan.files["slime_trainer_only.sh"]
    assert plan.argv == ["bash", str(tmp_path.resolve() / "slime_trainer_only.sh")]
    phase1, phase2 = (line for line in script.splitlines() if line.startswith("ray job submit"))
    assert "--debug-rollout-only" in phase1 and "--num-rollout 2" in phase1
    assert "slime_prepare/rollout_dumps/rollout_{rollout_id}.pt" in phase1
    assert "--load-debug-rollout-data" in phase2 and "slime_prepare/rollout_dumps/rollout_0.pt" in phase2
    assert "--rollout-num-gpus" not in phase2 and "--save-debug-rollout-data" not in phase2
    assert "--num-rollout 5" in phase2
    manifest = json.loads(plan.files[HANDOFF_FILE])
    assert manifest["benchmark"] == "trainer_only" and len(manifest["commands"]) == 2
    for cmd in manifest["commands"]:
        assert unknown_arguments(cmd[cmd.index("--") + 1 :], "624b824") == []


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("slime-*.toml")), ids=lambda p: p.name)
def test_experiment_specs_render(path: Path, tmp_path: Path) -> None:
    s = load_spec(path)
    plan = SlimeAdapter().render(s, tmp_path)
    assert plan.argv


def test_case_study_4_spec(tmp_path: Path) -> None:
    s = load_spec(ROOT / "experiments" / "slime-case-study-4.toml")
    _, argv = submitted(SlimeAdapter().render(s, tmp_path))
    assert argv[1] == "/root/slime/train_async.py"
    assert (option(argv, "--actor-num-nodes"), option(argv, "--rollout-num-gpus")) == ("4", "64")
    assert (option(argv, "--global-batch-size"), option(argv, "--n-samples-per-prompt")) == ("64", "8")
    assert option(argv, "--rollout-max-context-len") == "32768" and "--partial-rollout" in argv
    assert option(argv, "--update-weights-interval") == "5" and option(argv, "--num-layers") == "94"


def test_the_flag_equals_value_form_is_read_and_checked_like_argparse() -> None:
    argv = ["python3", "train_async.py", "--rollout-batch-size=32", "--n-samples-per-prompt", "8", "--colocate",
            "--rollout-function-path=pkg.mod.fn", "--num-rollout=-1", "--num-layers=4", "--colocat=1"]  # fmt: skip
    parsed = from_argv(argv, "typed")
    assert (parsed.rollout_batch_size, parsed.n_samples_per_prompt, parsed.num_rollout) == (32, 8, -1)
    assert parsed.rollout_function_path == "pkg.mod.fn" and parsed.colocate is True and parsed.partial_rollout is False
    assert unknown_arguments(argv, "624b824") == ["--colocat"]
