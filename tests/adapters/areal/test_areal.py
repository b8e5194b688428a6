"""The AReaL adapter: its trial folder (written by AReaL's own tracers, tests/fixtures/areal/README.md) reads to the
figures computed by hand from the scenario; its stats history alone reads through the key map; a damaged trace
line is named by file and line; the rendered areal.yaml holds only fields of AReaL's GRPOConfig."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchbed.adapter import get_adapter
from benchbed.adapterkit.histories import open_history
from benchbed.errors import NotThisFrameworkError, SpecError
from benchbed.metrics import compute_metrics
from benchbed.spec import build_spec, load_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "areal"
RUN = FIXTURES / "grpo-async-6x8"
ADAPTER = get_adapter("areal")
US = 1e-6  # AReaL's perf tracer clamps a 0 s scope to 1 µs: the four empty scopes of a step and a ready batch


def test_the_package_is_a_key_map_a_config_template_150_lines_and_its_own_parsing() -> None:
    """The options, renderer, run marker and parse entry points within the kit's budget for a history-based adapter;
    spans.py is the perf-trace/session parsing only AReaL needs."""
    package = ROOT / "adapters" / "areal"
    lines = {p.name: len(p.read_text().splitlines()) for p in package.glob("*.py")}
    assert (package / "keymap.toml").is_file() and (package / "areal.yaml").is_file()
    assert sum(n for name, n in lines.items() if name != "spans.py") <= 150 and lines["spans.py"] <= 120


def _metrics(trace, warmup: int) -> dict[str, float]:
    return {k: v.value for k, v in compute_metrics(trace, warmup_steps=warmup).items()}


def test_the_trial_folder_reads_to_the_hand_computed_figures() -> None:
    """Waves of 2 prompts x 4 samples take 4 s (3.5 generate + 0.5 reward); a step is 6 s of scopes after its
    wait; wave k needs version k - 1. Steps [0,10] (wait 4), [10,16], ..., [34,40]; waves [0,4] v0, [4,8] v0,
    [9.5,13.5] v1, [15.5,19.5] v2, [21.5,25.5] v3, [27.5,31.5] v4; step k+1 trains wave k at version k."""
    trace = ADAPTER.parse(RUN).validate()
    assert (trace.meta.concurrency, trace.meta.samples_per_step, trace.meta.group_size) == (8, 8, 4)
    assert trace.meta.warnings == [] and not trace.meta.partial
    steps = trace.of("trainer.step")
    assert list(zip(steps["t0"], steps["t1"], strict=True)) == [(0, 10), (10, 16), (16, 22), (22, 28), (28, 34),
                                                                  (34, 40)]  # fmt: skip
    rollouts = trace.of("rollout")
    assert len(rollouts) == 48 and set(rollouts["status"]) == {"ok"}
    waves = rollouts.groupby("step").agg(t0=("t0", "min"), t1=("t1", "max"), v=("v_start", "max"), n=("t0", "size"))
    assert waves.to_dict("list") == {"t0": [0, 4, 9.5, 15.5, 21.5, 27.5], "t1": [4, 8, 13.5, 19.5, 25.5, 31.5],
                                     "v": [0, 0, 1, 2, 3, 4], "n": [8] * 6}  # fmt: skip
    whole = _metrics(trace, 0)
    assert whole["trainer_idle_ratio"] == pytest.approx((4 + 5 * US) / 40)
    assert whole["trainer_weight_sync_ratio"] == pytest.approx(6 / 40)
    assert whole["generator_utilization"] == pytest.approx(6 * 4 * 8 / (8 * 40))
    assert whole["staleness_mean"] == pytest.approx(40 / 48) and whole["staleness_max"] == 1
    assert whole["framework_token_staleness_mean"] == pytest.approx(5 / 6)  # AReaL's per-step figures 0,1,1,1,1,1
    steady = _metrics(trace, 1)  # steps 2-6: [10, 40]
    assert steady["trainer_idle_ratio"] == pytest.approx(5 * US / 30)
    assert steady["generator_utilization"] == pytest.approx((3.5 + 3 * 4) * 8 / (8 * 30))  # wave 2 from 10 s, waves 3-5
    assert steady["staleness_mean"] == steady["framework_token_staleness_mean"] == steady["staleness_max"] == 1
    # AReaL counts accepted tasks (prompts, a group each) between two commits: kept native, not samples.accepted
    accepted = trace.of("native.areal.rollout/accepted__count").sort_values("step")
    assert list(accepted["step"]) == [1, 2, 3, 4, 5] and list(accepted["value"]) == [4, 2, 2, 2, 2]


def test_the_stats_history_alone_reads_through_the_key_map() -> None:
    """AReaL logs no step total: the step is the sum of its timeperf/* scopes (log_stats, untimed, is left out)."""
    trace = ADAPTER.parse_history(open_history(RUN / "tensorboard")).validate()
    steps = trace.of("trainer.step").sort_values("step")
    assert list(steps["step"]) == [1, 2, 3, 4, 5, 6]
    assert list(steps["value"]) == pytest.approx([9.5 + 4 * US] + [5.5 + 5 * US] * 5)
    metrics = _metrics(trace, 0)
    assert metrics["trainer_idle_ratio"] == pytest.approx((4 + 5 * US) / (9.5 + 5 * 5.5 + 29 * US))
    assert metrics["framework_token_staleness_step_max"] == pytest.approx(5 / 6)
    assert "native.areal.timeperf/rollout__count" in set(trace.events["key"])


def test_the_trained_batchs_reward_and_the_evaluation_are_quality_rows() -> None:
    """Each group's first 1 + wave // 2 samples score 1 (make_fixtures.reward): step k + 1 trains wave k, so
    ppo_actor/task_reward/avg is 0.25, 0.25, 0.5, 0.5, 0.75, 0.75; the one evaluation (global step 3, rewards
    1, 1, 0, 1) is quality.eval.reward at step 4. The trial folder and its history alone agree."""
    for trace in (ADAPTER.parse(RUN), ADAPTER.parse_history(open_history(RUN / "tensorboard"))):
        reward = trace.of("quality.reward_mean").sort_values("step")
        assert list(zip(reward["step"], reward["value"], strict=True)) == [(1, 0.25), (2, 0.25), (3, 0.5), (4, 0.5),
                                                                           (5, 0.75), (6, 0.75)]  # fmt: skip
        evaluation = trace.of("quality.eval.reward")
        assert list(zip(evaluation["step"], evaluation["value"], strict=True)) == [(4, 0.75)]
        metrics = _metrics(trace, 1)
        assert metrics["final_reward_mean"] == pytest.approx(0.75) and metrics["reward_gain"] == pytest.approx(0.5)
    # the samples finished between two commits (not the batch trained) stay AReaL's own figure
    assert len(ADAPTER.parse(RUN).of("native.areal.rollout/reward"))


def _rows(trace) -> list[tuple[str, int, float]]:
    return sorted((str(k), int(s), round(float(v), 5)) for k, s, v in trace.events[["key", "step", "value"]].values)


def test_the_same_stats_in_wandb_read_as_in_tensorboard() -> None:
    """wandb's offline run (AReaL's StatsLogger logs each step to both) gives the TensorBoard history's rows, and
    records the AReaL release from the run's requirements."""
    (run,) = (RUN / "wandb").glob("offline-run-*")
    wandb = ADAPTER.parse(run)
    assert _rows(wandb) == _rows(ADAPTER.parse(RUN / "tensorboard"))
    assert wandb.meta.framework_version == "1.0.4" and wandb.meta.extra["history"]["tracker"] == "wandb"


@pytest.mark.slow
def test_the_fixtures_regenerate_with_areals_own_code(tmp_path: Path, fixture_generator) -> None:
    """Opt-in: needs AReaL importable (tests/fixtures/areal/README.md says how; it cannot join the venv, whose torch
    is newer than AReaL pins). The traces, sessions and config byte for byte; the histories by their rows."""
    pytest.importorskip("areal.utils.perf_tracer", reason="AReaL is not importable (tests/fixtures/areal/README.md)")
    fixture_generator("areal/make_fixtures.py").main(tmp_path / "run")
    for name in ("perf_tracer/master/traces-r0.jsonl", "session_tracer/master/sessions-r0.jsonl", "config.yaml"):
        assert (tmp_path / "run" / name).read_bytes() == (RUN / name).read_bytes(), name
    assert (tmp_path / "grpo_config_fields.json").read_bytes() == (FIXTURES / "grpo_config_fields.json").read_bytes()
    for history in ("tensorboard", "wandb"):
        (mine,) = (tmp_path / "run").glob(f"{history}/*") if history == "wandb" else [tmp_path / "run" / history]
        (theirs,) = RUN.glob(f"{history}/*") if history == "wandb" else [RUN / history]
        assert _rows(ADAPTER.parse(mine)) == _rows(ADAPTER.parse(theirs)), history


def test_a_damaged_trace_line_is_named_and_the_rest_is_read(tmp_path: Path) -> None:
    run = tmp_path / "trial0"
    shutil.copytree(RUN, run)
    traces = run / "perf_tracer" / "master" / "traces-r0.jsonl"
    lines = traces.read_text().splitlines(keepends=True)
    lines[5] = lines[5][:40] + "\n"
    traces.write_text("".join(lines) + lines[-1][:30])
    trace = ADAPTER.parse(run)
    assert trace.meta.partial
    assert any(w.startswith(f"{traces}:6: skipped line that is not JSON") for w in trace.meta.warnings)
    assert any(w.startswith(f"{traces}:{len(lines) + 1}: skipped truncated last line") for w in trace.meta.warnings)
    assert len(trace.of("trainer.step")) == 6


def test_rejected_and_unfinished_samples_keep_their_step(tmp_path: Path) -> None:
    """A task rejected by the dynamic filter at 14.5 s (during step 2) and one still generating at exit (AReaL's
    flush(force=True) writes it `pending`, with no finalized_ts) are not trained: discarded at step 2, and aborted
    running to the end of step 6, from version 5 (updates end at 9.5, 15.5, ..., 33.5 s)."""
    run = tmp_path / "trial0"
    shutil.copytree(RUN, run)
    epoch = 1_780_000_000.0
    extra = [{"task_id": 90, "session_id": 90, "rank": 0, "status": "rejected", "reason": "rejected",
              "submit_ts": epoch + 10, "finalized_ts": epoch + 14.5,
              "phases": {"generate": [{"start_ts": epoch + 10, "end_ts": epoch + 13.5}]}},
             {"task_id": 91, "session_id": 91, "rank": 0, "status": "pending", "submit_ts": epoch + 36,
              "phases": {"generate": [{"start_ts": epoch + 36, "end_ts": None}]}}]  # fmt: skip
    with (run / "session_tracer" / "master" / "sessions-r0.jsonl").open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in extra)
    trace = ADAPTER.parse(run).validate()
    rows = trace.of("rollout").set_index("sample").loc[["r0-s90", "r0-s91"]]
    assert rows[["status", "step", "t0", "t1", "v_start", "v_end", "v_train"]].values.tolist() == [
        ["discarded", 2, 10.0, 14.5, 1, 1, -1], ["aborted", 6, 36.0, 40.0, 5, -1, -1]]  # fmt: skip
    steady = _metrics(trace, 1)
    assert steady["wasted_generation_fraction"] == pytest.approx(1 / 33)  # waves 2-5 and the rejected task end in it
    assert steady["generator_utilization"] == pytest.approx((15.5 * 8 + 4.5 + 4) / (8 * 30))
    assert steady["staleness_mean"] == 1


def test_another_frameworks_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotThisFrameworkError):
        ADAPTER.parse(tmp_path)
    (tmp_path / "perf_tracer").mkdir()
    (tmp_path / "perf_tracer" / "traces-r0.jsonl").write_text('{"name": "step", "ph": "X", "ts": 0, "dur": 5}\n')
    with pytest.raises(NotThisFrameworkError, match="no train.. spans"):
        ADAPTER.parse(tmp_path)


def _paths(tree: dict, prefix: str = "") -> set[str]:
    out = set()
    for key, value in tree.items():
        out.add(prefix + key)
        if isinstance(value, dict) and value:
            out |= _paths(value, f"{prefix}{key}.")
    return out


def test_the_rendered_config_holds_only_grpo_config_fields(tmp_path: Path) -> None:
    """grpo_config_fields.json is GRPOConfig's field tree, written by the fixture generator from AReaL's class
    (the rendered compare spec was also loaded by AReaL's own OmegaConf.structured(GRPOConfig): README.md)."""
    spec = load_spec(ROOT / "experiments" / "compare" / "areal.toml")
    plan = ADAPTER.render(spec, tmp_path)
    assert plan.argv == ["python3", "-m", "areal.infra.launcher.slurm", "examples/math/gsm8k_rl.py", "--config",
                         "areal.yaml"]  # fmt: skip
    config = yaml.safe_load(plan.files["areal.yaml"])
    known = _paths(json.loads((FIXTURES / "grpo_config_fields.json").read_text()))
    assert _paths(config) - known == set()
    assert config["rollout"]["max_head_offpolicyness"] == 1 and config["rollout"]["consumer_batch_size"] == 64
    assert (config["rollout"]["backend"], config["actor"]["backend"]) == ("sglang:d16p1t1", "megatron:d16p1t1")
    assert config["gconfig"]["n_samples"] == 8 and config["cluster"]["n_nodes"] == 4


@settings(max_examples=60, deadline=None)
@example(path="data/${oc.env:HOME}", entry="train.py", model="Qwen\\${x}")
@example(path="\\\\${a}\\", entry="${b}", model="m")
@example(path="1e3", entry="yes", model="0E0")  # found by a random draw in CI: OmegaConf read 0E0 as 0.0
@given(path=st.text(max_size=16), entry=st.text(min_size=1, max_size=12), model=st.text(min_size=1, max_size=12))
def test_strings_round_trip_through_omegaconf(path: str, entry: str, model: str) -> None:
    """AReaL reads areal.yaml with Hydra/OmegaConf: a `${` or backslash in a path or model name stays text."""
    omegaconf = pytest.importorskip("omegaconf", reason="OmegaConf comes with the `verl` extra")
    spec = build_spec({"name": "a", "adapter": "areal", "workload": {"model": model},
                       "areal": {"dataset_path": path, "entry": entry}})  # fmt: skip
    plan = ADAPTER.render(spec, Path("/runs/x ${y}"))
    read = omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.create(plan.files["areal.yaml"]), resolve=True)
    assert (read["train_dataset"]["path"], read["actor"]["path"], read["cluster"]["fileroot"]) == (
        path, model, "/runs/x ${y}")  # fmt: skip
    assert plan.argv[3] == entry


def test_a_run_it_renders_reads_back_as_its_own(tmp_path: Path) -> None:
    """The rendered fileroot puts AReaL's trial folder under the run directory, where find_runs looks."""
    spec = build_spec({"name": "a", "adapter": "areal", "workload": {"steps": 6, "max_staleness": 2},
                       "resources": {"trainer_gpus": 8, "generator_gpus": 8}, "areal": {}})  # fmt: skip
    config = yaml.safe_load(ADAPTER.render(spec, tmp_path).files["areal.yaml"])
    assert config["rollout"]["max_head_offpolicyness"] == 2
    trial = Path(config["perf_tracer"]["fileroot"], "logs", "someone", "benchbed", "trial0")
    shutil.copytree(RUN, trial)
    assert ADAPTER.find_runs(tmp_path) == [trial]


def test_colocated_resources_are_refused(tmp_path: Path) -> None:
    spec = build_spec({"name": "a", "adapter": "areal", "resources": {"colocated": True}, "areal": {}})
    with pytest.raises(SpecError, match="colocated = false"):
        ADAPTER.render(spec, tmp_path)
