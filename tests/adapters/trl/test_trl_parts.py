"""The trl adapter's pieces without a training run: options, render, the schedule, the reward rule, and the parser on
a committed real run (tests/fixtures/trl/, made by `benchbed run experiments/trl-grpo-cpu.toml`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from benchbed.adapters.trl.launch import version_problem
from benchbed.adapters.trl.parse import parse_path
from benchbed.adapters.trl.rewards import grade
from benchbed.adapters.trl.schedule import Schedule

from benchbed import keys as K
from benchbed.adapter import get_adapter
from benchbed.engine.tasks import CHECKER
from benchbed.errors import AdapterError, SpecError
from benchbed.metrics import compute_metrics
from benchbed.spec import build_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "trl" / "grpo-spg2-sandbox"


def _spec(trl: dict, **workload) -> object:
    w = {"prompts_per_step": 2, "group_size": 4, "max_response_tokens": 6, "steps": 4, **workload}
    return build_spec({"name": "t", "adapter": "trl", "workload": w, "trl": trl})


@pytest.mark.parametrize("field", ["model_path", "data"])
def test_a_hub_id_is_refused_at_validation_with_what_to_do(field: str) -> None:
    with pytest.raises(SpecError) as err:
        _spec({field: "Qwen/Qwen3-0.6B"})
    message = str(err.value)
    assert f"trl.{field}" in message and "never downloads" in message and "hf download Qwen/Qwen3-0.6B" in message


def test_a_local_path_that_looks_like_org_name_is_accepted_when_written_as_a_path(tmp_path: Path) -> None:
    (tmp_path / "Qwen" / "tiny").mkdir(parents=True)
    spec = _spec({"model_path": str(tmp_path / "Qwen" / "tiny")})
    assert f"launch.local_model('{tmp_path / 'Qwen' / 'tiny'}')" in get_adapter("trl").render(spec, tmp_path).files[
        "trl_grpo.py"]  # fmt: skip


@pytest.mark.parametrize(("trl", "expected"), [
    ({"rewards": ["nonsense"]}, "reward 'nonsense' is neither a built-in"),
    ({"loss_type": "ppo"}, "trl.loss_type"),
    ({"num_iterations": 0}, "trl.num_iterations"),
    ({"model": {"hidden": 30, "heads": 4}}, "hidden must be a multiple of heads"),
    ({"reward_weights": [1.0, 2.0]}, "reward_weights has 2 entries for 1 rewards"),
    ({"grpo_epochs": 2}, "unknown field 'trl.grpo_epochs'"),
])  # fmt: skip
def test_options_are_validated_when_the_spec_is_loaded(trl: dict, expected: str) -> None:
    with pytest.raises(SpecError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        _spec(trl)


def test_a_generation_batch_that_splits_a_group_is_refused_before_launch(tmp_path: Path) -> None:
    spec = _spec({"per_device_train_batch_size": 6}, group_size=4)
    with pytest.raises(SpecError, match=r"6 × 1, must be a multiple of num_generations \(4\)"):
        get_adapter("trl").render(spec, tmp_path)


def test_a_trl_release_outside_the_tested_range_is_named_with_the_range() -> None:
    assert version_problem("1.16.0") is None and version_problem("1.16.3") is None
    expected = (
        "TRL 1.15.2 is outside the range benchbed's trl adapter was tested with (>=1.16,<1.17): "
        "pip install 'trl>=1.16,<1.17' (or 'benchbed[trl]')"
    )
    assert version_problem("1.15.2") == expected
    assert "TRL 2.0.0 is outside" in version_problem("2.0.0")


def test_render_writes_a_runnable_script_from_the_table(tmp_path: Path) -> None:
    spec = _spec(
        {
            "steps_per_generation": 2,
            "num_iterations": 2,
            "beta": 0.04,
            "loss_type": "grpo",
            "seed": 7,
            "model": {"arch": "qwen3_moe"},
            "rewards": ["arith", "arith_sandbox"],
            "reward_weights": [1, 0.5],
        }
    )
    plan = get_adapter("trl").render(spec, tmp_path)
    text = plan.files["trl_grpo.py"]
    compile(text, "trl_grpo.py", "exec")
    for line in (
        "steps_per_generation=2,",
        "num_iterations=2,",
        "beta=0.04,",
        "loss_type='grpo',",
        "seed=7,",
        "num_generations=4,",
        "per_device_train_batch_size=8,",
        "max_completion_length=6,",
        "max_steps=4,",
        "use_cpu=True,",
        "report_to=['wandb'],",
        "reward_weights=[1.0, 0.5],",
        "arch='qwen3_moe'",
    ):
        assert line in text, line  # fmt: skip
    assert plan.env["WANDB_MODE"] == "offline" and plan.env["HF_HUB_OFFLINE"] == "1"
    assert plan.argv[1:] == ["trl_grpo.py"]


def test_async_grpo_on_a_gpu_needs_a_local_checkpoint(tmp_path: Path) -> None:
    """On a GPU the user's server serves a checkpoint; on a CPU the run saves the tiny model (test_trl_vllm_parts)."""
    with pytest.raises(SpecError, match="set trl.model_path"):
        get_adapter("trl").render(_spec({"trainer": "async_grpo", "use_cpu": False}), tmp_path)
    (tmp_path / "ckpt").mkdir()
    plan = get_adapter("trl").render(_spec({"trainer": "async_grpo", "model_path": str(tmp_path / "ckpt"),
                                            "use_cpu": False}, max_staleness=3), tmp_path)  # fmt: skip
    text = plan.files["trl_async_grpo.py"]
    compile(text, "trl_async_grpo.py", "exec")
    assert "max_staleness=3," in text and "AsyncGRPOTrainer(model=" in text


def test_an_uninstalled_trl_is_one_line_with_what_to_install(tmp_path: Path, monkeypatch) -> None:
    import benchbed.adapters.trl.render as render
    import benchbed.adapters.trl.script_parts as script_parts

    monkeypatch.setattr(script_parts, "version", lambda name: "1.15.0")
    with pytest.raises(AdapterError, match=r"TRL 1.15.0 is outside .*\(>=1.16,<1.17\)"):
        render.render_plan(_spec({}), tmp_path)


@pytest.mark.parametrize(("spg", "iters", "accum", "uses"), [
    (1, 1, 1, {(0, 0): [0], (1, 0): [1]}),
    (4, 1, 1, {(0, 0): [0], (0, 3): [3], (1, 0): [4]}),
    (2, 2, 1, {(0, 0): [0, 2], (0, 1): [1, 3], (1, 0): [4, 6]}),
    (2, 1, 2, {(0, 0): [0], (0, 1): [0], (1, 1): [1]}),  # one optimizer step eats both slices: staleness 0
])  # fmt: skip
def test_the_schedule_follows_trl_prepare_inputs(spg: int, iters: int, accum: int, uses: dict) -> None:
    s = Schedule(per_device_batch=8, steps_per_generation=spg, num_iterations=iters, grad_accum=accum)
    for (g, slice_), versions in uses.items():
        assert s.uses(g, slice_) == versions
    assert s.generated_in_step(1) == spg * iters // accum + 1


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("19", "19"),
        ("19+", "19"),
        ("190", "19"),
        ("1", "19"),
        ("2", "19"),
        ("", "19"),
        ("-4", "-4"),
        ("-5", "-4"),
        ("+", "3"),
    ],
)
def test_the_python_grade_is_the_engines_checker(response: str, expected: str) -> None:
    shell = subprocess.run(["/bin/sh", "-c", CHECKER, "sh", response, expected, "0"], capture_output=True, check=True)
    assert grade(response, expected) == json.loads(shell.stdout)["reward"]


def test_the_committed_run_parses_to_the_schedule_and_the_recorded_batches() -> None:
    trace = parse_path(FIXTURE)
    events = trace.events
    rollouts = events[events["key"] == K.ROLLOUT]
    assert len(rollouts) == 4 * 16  # 8 steps, a batch of 16 every 2
    staleness = (rollouts["v_train"] - rollouts["v_start"]).groupby(rollouts["step"]).unique()
    assert {k: list(v) for k, v in staleness.items()} == {k: [(k - 1) % 2] for k in range(1, 9)}
    state = json.loads((FIXTURE / "trainer_state.json").read_text())
    assert (rollouts["prompt_tokens"] + rollouts["response_tokens"]).sum() == state["num_input_tokens_seen"]
    metrics = compute_metrics(trace, warmup_steps=0)
    logged = [e["frac_reward_zero_std"] for e in state["log_history"] if "frac_reward_zero_std" in e]
    assert len(logged) == 4  # TRL's own figure, one per batch of 4 groups
    assert metrics["zero_adv_group_fraction"].value == pytest.approx(sum(logged) / len(logged), abs=1e-12)
    assert metrics["framework_zero_adv_group_fraction"].value == pytest.approx(sum(logged) / len(logged))
    assert len(events[events["key"] == K.SANDBOX_START]) == 64
    assert not trace.meta.partial and trace.meta.framework_version == "1.16.0"


def test_the_committed_runs_steps_are_painted_from_trls_timers() -> None:
    """Every step is its components end to end; the wait is the profiled batch preparation, which TRL logs at the
    steps that generate (odd steps here), so even steps wait only for their slice of the batch."""
    events = parse_path(FIXTURE).events
    steps = events[events["key"] == K.TRAINER_STEP].set_index("step")
    parts = events[events["key"].isin([K.TRAINER_WAIT, K.TRAINER_COMPUTE])]
    by_step = (parts["t1"] - parts["t0"]).groupby(parts["step"]).sum()
    assert by_step.to_numpy() == pytest.approx((steps["t1"] - steps["t0"]).loc[by_step.index].to_numpy())
    wait = parts[parts["key"] == K.TRAINER_WAIT]
    waited = (wait["t1"] - wait["t0"]).groupby(wait["step"]).sum()
    assert all(waited[k] > 0.1 for k in (1, 3, 5, 7)) and all(waited[k] < 0.05 for k in (2, 4, 6, 8))
    generation = events[events["key"] == "native.trl.generation_s"]
    assert sorted(generation["step"]) == [1, 3, 5, 7]


def test_async_grpo_per_step_figures_become_trainer_components(tmp_path: Path) -> None:
    """trainer_state.json as TRL 1.16.0's AsyncGRPOTrainer logs it (imitated: the key names of
    trl/experimental/async_grpo/async_grpo_trainer.py `_log_perf_metrics`, `_on_weight_sync`; it needs a GPU and a
    vLLM server, see test_trl_async_gpu.py for the real run). Step 1 has no `perf/step_s` (nothing before it)."""
    log = [
        {"step": 1, "perf/fwd_bwd_s": 0.5, "perf/optimizer_s": 0.1, "perf/rollout_wait_s": 2.0,
         "batch/samples_per_step": 8.0, "batch/trained_tokens_per_step": 96.0, "sample/staleness_mean": 0.0},
        *({"step": k, "perf/step_s": 1.0, "perf/fwd_bwd_s": 0.5, "perf/optimizer_s": 0.1, "perf/rollout_wait_s": 0.3,
           "perf/weight_sync_s": 0.1, "batch/samples_per_step": 8.0, "batch/trained_tokens_per_step": 96.0,
           "sample/staleness_mean": 1.0, "sample/staleness_max": 2.0, "sample/time_in_queue_s": 0.4}
          for k in (2, 3)),
        {"train_runtime": 4.0, "step": 3},
    ]  # fmt: skip
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": log, "global_step": 3, "max_steps": 3}))
    (tmp_path / "training_args.json").write_text(json.dumps({"num_generations": 4, "per_device_train_batch_size": 8,
                                                             "max_staleness": 2}))  # fmt: skip
    trace = parse_path(tmp_path)
    assert trace.meta.mode == "async" and not trace.meta.partial
    metrics = compute_metrics(trace, warmup_steps=1)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(0.3)
    assert metrics["trainer_compute_ratio"].value == pytest.approx(0.6)
    assert metrics["trainer_weight_sync_ratio"].value == pytest.approx(0.1)
    assert metrics["framework_staleness_mean"].value == pytest.approx(1.0)
    assert metrics["trainer_throughput_sps"].value == pytest.approx(8.0)


def test_without_a_wandb_history_steps_are_trls_step_time_and_idle_is_absent(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run, ignore=shutil.ignore_patterns("wandb"))
    trace = parse_path(run)
    steps = trace.events[trace.events["key"] == K.TRAINER_STEP]
    state = json.loads((run / "trainer_state.json").read_text())
    assert list(steps["kind"].unique()) == ["agg"]
    assert list(steps["value"]) == [e["step_time"] for e in state["log_history"] if "step_time" in e]
    metrics = compute_metrics(trace, warmup_steps=1)
    assert "trainer_idle_ratio" not in metrics and metrics["staleness_mean"].value == pytest.approx(4 / 7)
    assert any("no W&B history" in w for w in trace.meta.warnings)


def test_values_from_the_spec_reach_the_script_as_literals_never_as_code(tmp_path: Path) -> None:
    """A spec name, a path or a reward reference with quotes and newlines stays one string in the script."""
    import ast

    odd = tmp_path / 'we"ird\'\'\'\n"""dir'
    odd.mkdir()
    (odd / "r.py").write_text("def r(prompts, completions, **kw):\n    return [0.0] * len(completions)\n")
    spec = build_spec({"name": '"""\nimport os\n"""', "adapter": "trl", "workload": {"group_size": 4, "steps": 2},
                       "trl": {"rewards": [f"{odd / 'r.py'}:r"], "model_path": str(odd)}})  # fmt: skip
    text = get_adapter("trl").render(spec, tmp_path).files["trl_grpo.py"]
    tree = ast.parse(text)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) and n.names[0].name == "os"]
    assert ast.literal_eval(tree.body[0].value).endswith('("""\nimport os\n""").')
    assert f"{odd / 'r.py'}:r" in [c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)]
