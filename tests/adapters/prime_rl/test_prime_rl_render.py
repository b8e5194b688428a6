"""Rendering: spec -> rl TOML checked against the pinned field list, presets, launch plan, checkout errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl.fields import field_list
from benchbed.adapters.prime_rl.keypaths import flatten
from benchbed.adapters.prime_rl.presets import presets
from benchbed.adapters.prime_rl.render import CONFIG_FILE, render_config, render_plan
from prime_rl_fields import extract  # tools/, on pytest's pythonpath

from benchbed.adapter import get_adapter
from benchbed.adapterkit.handoff import HANDOFF_FILE
from benchbed.adapterkit.presets import preset_for_model
from benchbed.adapterkit.templates import toml_text
from benchbed.errors import LaunchError, SpecError
from benchbed.spec import build_spec, load_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]
CASE_1 = ROOT / "experiments" / "prime-rl-case-study-1.toml"
CASE_2 = ROOT / "experiments" / "prime-rl-case-study-2.toml"


def small_spec(**prime_rl) -> object:
    return build_spec(
        {
            "name": "toy",
            "adapter": "prime_rl",
            "workload": {
                "model": "Qwen/Qwen3-0.6B",
                "prompts_per_step": 4,
                "group_size": 8,
                "max_response_tokens": 1024,
                "max_seq_len": 2048,
                "max_staleness": 2,
                "steps": 20,
                "task": "reverse-text",
            },
            "resources": {"trainer_gpus": 1, "generator_gpus": 1, "gpus_per_node": 8},
            "prime_rl": prime_rl,
        }
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A stand-in prime-rl checkout (just its pyproject) for plans that do not run anything."""
    path = tmp_path / "prime-rl"
    path.mkdir()
    (path / "pyproject.toml").write_text('[project]\nname = "prime-rl"\nversion = "0.8.0"\n')
    return path


def test_case_study_1(tmp_path: Path) -> None:
    cfg = render_config(load_spec(CASE_1))
    assert cfg["model"]["name"] == "Qwen/Qwen3-235B-A22B-Thinking-2507"
    assert (cfg["seq_len"], cfg["max_steps"]) == (32768, 50)
    orch = cfg["orchestrator"]
    assert (orch["batch_size"], orch["group_size"], orch["max_off_policy_steps"]) == (512, 16, 16)
    assert orch["train"]["sampling"]["max_completion_tokens"] == 26624
    source = orch["train"]["source"][0]
    assert source["env"]["agent"]["runtime"]["type"] == "prime"
    assert source["env"]["agent"]["harness"]["id"] == "mini-swe-agent"
    assert cfg["deployment"] == {
        "type": "multi_node",
        "gpus_per_node": 8,
        "num_train_nodes": 8,
        "num_infer_replicas": 24,
        "num_infer_nodes": 1,
    }
    assert cfg["slurm"]["job_name"] == "prime-rl-case-study-1"
    assert cfg["trainer"]["model"]["ep"] == 8 and cfg["trainer"]["model"]["optim_cpu_offload"] is True
    assert cfg["inference"]["vllm"] == {"tensor_parallel_size": 8, "enable_expert_parallel": True}
    assert cfg["orchestrator"]["renderer"] == {"name": "qwen3"}  # the 2507 id is not in renderers' auto map


def test_case_study_2_is_prefill_decode_disaggregated() -> None:
    cfg = render_config(load_spec(CASE_2))
    assert cfg["deployment"] == {
        "type": "multi_node",
        "gpus_per_node": 8,
        "num_train_nodes": 16,
        "num_infer_replicas": 2,
    }
    assert cfg["inference"]["deployment"] == {
        "type": "disaggregated",
        "prefill_nodes_per_replica": 4,
        "decode_nodes_per_replica": 4,
    }
    assert cfg["orchestrator"]["max_off_policy_steps"] == 16 and cfg["seq_len"] == 65536
    assert (cfg["orchestrator"]["batch_size"], cfg["orchestrator"]["group_size"]) == (512, 16)
    assert cfg["trainer"]["model"]["name"] == "zai-org/GLM-5"
    assert cfg["trainer"]["model"]["cp"] == 2 and cfg["trainer"]["model"]["ep"] == 8
    # prime-rl rejects an orchestrator model that differs from the served one.
    assert cfg["orchestrator"]["model"]["name"] == cfg["inference"]["vllm"]["model"] == "zai-org/GLM-5-FP8"
    assert "model" not in cfg


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(lambda: load_spec(CASE_1), id="case-study-1"),
        pytest.param(lambda: load_spec(CASE_2), id="case-study-2"),
        pytest.param(lambda: small_spec(), id="single-node-subprocess"),
        pytest.param(lambda: small_spec(runtime="modal", weight_broadcast="filesystem"), id="modal"),
        pytest.param(lambda: load_spec(CASE_1, ['prime_rl.preset="glm-4.5-air"']), id="glm-4.5-air"),
        pytest.param(lambda: load_spec(CASE_1, ['workload.model="Qwen/Qwen3-30B-A3B"']), id="qwen3-30b-a3b"),
    ],
)
def test_every_rendered_key_is_a_field_of_the_pinned_commit(spec) -> None:
    cfg = render_config(spec())
    keys = list(flatten(cfg))
    assert keys
    assert field_list("559b447").unknown(keys) == []


def test_unknown_key_is_caught_by_the_field_check() -> None:
    cfg = render_config(small_spec(config={"orchestrator": {"max_async_level": 2}}))
    assert field_list("559b447").unknown(list(flatten(cfg))) == ["orchestrator.max_async_level"]


def test_field_list_is_pinned() -> None:
    fields = field_list("559b447")
    assert fields.source.startswith("PrimeIntellect-ai/prime-rl@559b447 ")
    for key in (
        "orchestrator.max_off_policy_steps",
        "deployment.num_infer_replicas",
        "slurm.job_name",
        "orchestrator.train.source.env.agent.runtime.type",
        "inference.deployment.prefill_nodes_per_replica",
    ):
        assert fields.accepts(key)
    assert not fields.accepts("orchestrator.max_async_level")  # removed by PR #2631


def test_single_node_and_runtime_from_sandbox_backend() -> None:
    cfg = render_config(small_spec())
    assert cfg["deployment"] == {"type": "single_node", "gpus_per_node": 8, "num_train_gpus": 1, "num_infer_gpus": 1}
    assert "slurm" not in cfg
    source = cfg["orchestrator"]["train"]["source"][0]
    assert source["env"] == {
        "taskset": {"id": "reverse-text"},
        "agent": {"runtime": {"type": "subprocess"}, "harness": {"id": "null"}},
    }
    assert cfg["inference"] == {}


def test_passthrough_config_is_merged_last() -> None:
    cfg = render_config(small_spec(config={"orchestrator": {"batch_size": 64, "concurrency": {"max_inflight": 8}}}))
    assert cfg["orchestrator"]["batch_size"] == 64
    assert cfg["orchestrator"]["concurrency"] == {"max_inflight": 8}
    assert cfg["orchestrator"]["group_size"] == 8


def test_toml_round_trips() -> None:
    for spec in (load_spec(CASE_1), load_spec(CASE_2), small_spec()):
        cfg = render_config(spec)
        assert tomllib.loads(toml_text(cfg)) == cfg


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"bogus": 1}, "unknown field 'prime_rl.bogus'"),
        ({"runtime": "docker"}, "field 'prime_rl.runtime'"),
        ({"preset": "llama"}, "field 'prime_rl.preset'"),
    ],
)
def test_prime_rl_table_is_validated(table: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        render_config(small_spec(**table))


def test_runtime_labels_are_for_prime_sandboxes_only() -> None:
    with pytest.raises(SpecError, match="runtime_labels apply to Prime sandboxes only, not 'subprocess'"):
        render_config(small_spec(runtime_labels=["x"]))


def test_impossible_layouts_are_spec_errors() -> None:
    with pytest.raises(SpecError, match="multiple of gpus_per_node"):
        render_config(load_spec(CASE_1, ["resources.generator_gpus=100"]))
    with pytest.raises(SpecError, match="max_staleness >= 1"):
        render_config(
            small_spec().model_copy(update={"workload": small_spec().workload.model_copy(update={"max_staleness": 0})})
        )
    with pytest.raises(SpecError, match="colocated"):
        render_config(load_spec(CASE_1, ["resources.colocated=true"]))


@pytest.mark.parametrize(
    ("model", "preset"),
    [
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3-30b-a3b"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b"),
        ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
        ("zai-org/GLM-5", "glm-5"),
        ("zai-org/GLM-5-FP8", "glm-5"),
        ("Qwen/Qwen3-0.6B", None),
    ],
)
def test_presets_by_model_name(model: str, preset: str | None) -> None:
    found = preset_for_model(presets(), model)
    assert (found.name if found else None) == preset


def test_launch_plan(tmp_path: Path, checkout: Path) -> None:
    run_dir = tmp_path / "results" / "run 1"
    plan = render_plan(load_spec(CASE_1), run_dir, env={"PRIME_RL_DIR": str(checkout)})
    config = run_dir.absolute() / CONFIG_FILE
    assert plan.argv == [
        "uv",
        "run",
        "rl",
        "@",
        str(config),
        "--output-dir",
        str(run_dir.absolute()),
        "--run.name",
        "run-1",
    ]
    assert plan.cwd == str(checkout)
    assert set(plan.files) == {CONFIG_FILE, HANDOFF_FILE}
    assert tomllib.loads(plan.files[CONFIG_FILE]) == render_config(load_spec(CASE_1))
    assert plan.files[CONFIG_FILE].startswith("# Rendered by benchbed")


def test_checkout_from_the_spec_wins(tmp_path: Path, checkout: Path) -> None:
    spec = small_spec(checkout=str(checkout), extra_args=["--clean"])
    plan = render_plan(spec, tmp_path / "r", env={"PRIME_RL_DIR": "/nonexistent"})
    assert plan.cwd == str(checkout) and plan.argv[-1] == "--clean"


def test_missing_checkout_is_a_launch_error(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match=r"no prime-rl checkout given: set prime_rl.checkout = "):
        render_plan(small_spec(), tmp_path / "r", env={})
    with pytest.raises(LaunchError, match="not found or has no pyproject.toml"):
        render_plan(small_spec(), tmp_path / "r", env={"PRIME_RL_DIR": str(tmp_path / "missing")})
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "verl"\n')
    with pytest.raises(LaunchError, match="is not a prime-rl checkout"):
        render_plan(small_spec(checkout=str(other)), tmp_path / "r", env={})


def test_entry_point_is_registered() -> None:
    assert get_adapter("prime_rl").name == "prime_rl"


def test_field_extractor_on_a_small_config_tree(tmp_path: Path) -> None:
    configs = tmp_path / "prl" / "packages" / "prime-rl-configs" / "src" / "prime_rl" / "configs"
    configs.mkdir(parents=True)
    (configs / "rl.py").write_text(
        "from typing import Annotated, Literal, TypeAlias\n"
        "from pydantic import BaseModel, Field\n"
        "class BaseConfig(BaseModel):\n    pass\n"
        "class A(BaseConfig):\n    type: Literal['a'] = 'a'\n    x: int = 1\n"
        "class B(BaseConfig):\n    type: Literal['b'] = 'b'\n    y: int = 2\n"
        "AB: TypeAlias = Annotated[A | B, Field(discriminator='type')]\n"
        "class Item(BaseConfig):\n    name: str\n    env: dict[str, str] = {}\n"
        "class Base(BaseConfig):\n    inherited: int = 0\n"
        "class RLConfig(Base):\n    choice: AB = A()\n    items: list[Item] = []\n    maybe: B | None = None\n"
    )
    (tmp_path / "vf").mkdir()
    assert extract(tmp_path / "prl", tmp_path / "vf") == [
        "choice",
        "choice.type",
        "choice.x",
        "choice.y",
        "inherited",
        "items",
        "items.env",
        "items.env.*",
        "items.name",
        "maybe",
        "maybe.type",
        "maybe.y",
    ]


@pytest.mark.skipif(
    not os.environ.get("PRIME_RL_DIR") or shutil.which("uv") is None,
    reason="opt-in: set PRIME_RL_DIR to a prime-rl checkout (at 559b447) with uv installed",
)
def test_prime_rl_dry_run_accepts_the_rendered_configs(tmp_path: Path) -> None:
    """prime-rl's own validation: `uv run rl @ cfg --dry-run` resolves and writes the sub-configs."""
    for path in (CASE_1, CASE_2):
        run_dir = tmp_path / path.stem
        plan = render_plan(load_spec(path), run_dir)
        run_dir.mkdir(parents=True)
        (run_dir / CONFIG_FILE).write_text(plan.files[CONFIG_FILE])
        proc = subprocess.run([*plan.argv, "--dry-run"], cwd=plan.cwd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]


VALIDATE = """
import sys, tomllib
from prime_rl.configs.rl import RLConfig
for path in sys.argv[1:]:
    data = tomllib.load(open(path, "rb")) | {"output_dir": "/tmp/benchbed-prime-rl", "dry_run": True}
    cfg = RLConfig.model_validate(data)
    print(path, cfg.deployment.type, cfg.orchestrator.batch_size, cfg.orchestrator.max_off_policy_steps)
"""


@pytest.mark.skipif(
    not os.environ.get("PRIME_RL_CONFIGS_PYTHON"),
    reason="opt-in: set PRIME_RL_CONFIGS_PYTHON to a Python that imports prime_rl.configs (prime-rl-configs @ 559b447)",
)
def test_prime_rl_config_models_accept_the_rendered_configs(tmp_path: Path) -> None:
    """prime-rl's own RLConfig validators (model names, renderer, runtime union) on every spec variant."""
    overrides = [
        (CASE_1, ['prime_rl.taskset="wiki-search"']),  # r2e-gym lives in prime-envs, not in verifiers
        (CASE_2, []),
        (CASE_2, ['sandbox.backend="modal"', "prime_rl.runtime_labels=[]"]),
        (CASE_2, ['workload.model="zai-org/GLM-4.5-Air"']),
        (CASE_1, ['workload.model="Qwen/Qwen3-30B-A3B-Thinking-2507"', 'prime_rl.taskset="wiki-search"']),
    ]
    paths = []
    for i, (spec_path, sets) in enumerate(overrides):
        path = tmp_path / f"rl-{i}.toml"
        path.write_text(toml_text(render_config(load_spec(spec_path, sets))))
        paths.append(str(path))
    small = tmp_path / "small.toml"
    small.write_text(toml_text(render_config(small_spec())))
    paths.append(str(small))
    python = os.environ["PRIME_RL_CONFIGS_PYTHON"]
    proc = subprocess.run([python, "-c", VALIDATE, *paths], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(proc.stdout.splitlines()) == len(paths)
