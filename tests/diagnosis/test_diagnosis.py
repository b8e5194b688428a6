"""Diagnosis (issue #27): each rule on hand-made metrics, the four quickstart regimes the issue lists and the four
case studies simulated for real, the lever table against the spec models, and the CLI, run output and report."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from benchbed.diagnosis import REGIMES, diagnose_record
from benchbed.diagnosis.levers import CORE_TABLES, lever_table
from benchbed.diagnosis.rules import FLAG_RULES, FLAGS, diagnose_metrics
from benchbed.metrics import compute_metrics
from benchbed.sim import simulate_spec
from benchbed.spec import ExperimentSpec, load_spec

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"
REPRODUCE = ROOT / "experiments" / "reproduce" / "semianalysis"


def _metrics(spec: ExperimentSpec) -> dict[str, float]:
    values = compute_metrics(simulate_spec(spec), warmup_steps=spec.warmup_steps)
    return {name: metric.value for name, metric in values.items()}


def _quickstart(*overrides: str) -> dict[str, float]:
    return _metrics(load_spec(QUICKSTART, list(overrides)))


# --- the rules on hand-made metrics -------------------------------------------------------------------------------


def test_generation_bound_needs_only_idle_and_names_the_missing_evidence() -> None:
    d = diagnose_metrics({"trainer_idle_ratio": 0.45})
    assert d.regime == "generation_bound"
    assert [e.metric for e in d.evidence] == ["trainer_idle_ratio"]
    assert any("admission-bound cannot be told" in u for u in d.uncertain)
    assert any("generator saturation cannot be confirmed" in u for u in d.uncertain)


def test_no_trainer_wait_is_an_explicit_cannot_tell() -> None:
    d = diagnose_metrics({"generator_utilization": 0.9, "zero_adv_group_fraction": 0.5})
    assert d.regime == "unknown"
    assert d.flags == ["zero_advantage_waste"]
    assert d.headline().startswith("cannot tell: no trainer_idle_ratio")


@pytest.mark.parametrize(
    ("metrics", "regime"),
    [
        ({"trainer_idle_ratio": 0.05}, "trainer_bound"),
        ({"trainer_idle_ratio": 0.15}, "balanced"),
        ({"trainer_idle_ratio": 0.10}, "balanced"),  # the trainer-bound threshold is strict
        (
            {"trainer_idle_ratio": 0.20, "generator_utilization": 0.9, "generator_admission_idle_ratio": 0.0},
            "generation_bound",
        ),  # fmt: skip
        ({"trainer_idle_ratio": 0.5, "generator_admission_idle_ratio": 0.2}, "admission_bound"),
        ({"trainer_idle_ratio": 0.9, "group_straggler_ratio": 4.0, "generator_utilization": 0.3}, "straggler_bound"),
        # a long tail with busy slots is not a straggler problem
        ({"trainer_idle_ratio": 0.9, "group_straggler_ratio": 6.0, "generator_utilization": 0.8}, "generation_bound"),
        (
            {"trainer_idle_ratio": 0.6, "sandbox_init_failure_rate": 0.05, "generator_admission_idle_ratio": 0.5},
            "sandbox_bound",
        ),  # fmt: skip
        ({"trainer_idle_ratio": 0.5, "trainer_weight_sync_ratio": 0.20}, "weight_sync_bound"),
        ({"trainer_idle_ratio": 0.0, "trainer_weight_sync_ratio": 0.30}, "weight_sync_bound"),
        ({"trainer_idle_ratio": 0.5, "trainer_weight_sync_ratio": 0.19}, "generation_bound"),
        ({"trainer_idle_ratio": 0.5, "sandbox_start_share": 0.25}, "sandbox_start_bound"),
        ({"trainer_idle_ratio": 0.5, "sandbox_start_share": 0.24}, "generation_bound"),
        ({"trainer_idle_ratio": 0.05, "sandbox_start_share": 0.6}, "trainer_bound"),  # starts slow, trainer paces
        (
            {"trainer_idle_ratio": 0.5, "rollout_tail_share": 0.5, "generator_admission_idle_ratio": 0.6},
            "long_tail_bound",
        ),
        ({"trainer_idle_ratio": 0.5, "rollout_tail_share": 0.49}, "generation_bound"),
    ],
)
def test_regime_thresholds(metrics: dict[str, float], regime: str) -> None:
    assert diagnose_metrics(metrics).regime == regime


def test_flags_fire_at_their_thresholds_and_state_their_evidence() -> None:
    rules = [rule for flag in FLAG_RULES.values() for rule in flag]
    # on the side where each holds: at a >= threshold, just under a < threshold
    at = {rule.metric: rule.value if rule.op == ">=" else rule.value - 1e-9 for rule in rules}
    d = diagnose_metrics({"trainer_idle_ratio": 0.0, **at})
    assert d.regime == "trainer_bound" and d.flags == list(FLAGS)
    assert {(e.role, e.metric) for e in d.evidence if e.role != "regime"} == {
        (name, rule.metric) for name, flag in FLAG_RULES.items() for rule in flag
    }
    beyond = {rule.metric: rule.value * 0.99 if rule.op == ">=" else rule.value for rule in rules}
    assert diagnose_metrics({"trainer_idle_ratio": 0.0, **beyond}).flags == []


def test_a_stalled_reward_is_flagged_only_while_staleness_is_high() -> None:
    stalled = {"trainer_idle_ratio": 0.0, "reward_gain": 0.002, "staleness_mean": 1.5}
    d = diagnose_metrics(stalled)
    assert d.flags == ["stalled_learning"]
    assert {e.metric: e.direction for e in d.evidence if e.role == "stalled_learning"} == {
        "reward_gain": "below",
        "staleness_mean": "above",
    }
    assert diagnose_metrics({**stalled, "staleness_mean": 0.0}).flags == []  # synchronous: not a staleness stall
    assert diagnose_metrics({**stalled, "reward_gain": 0.05}).flags == []  # still learning
    assert diagnose_metrics({"trainer_idle_ratio": 0.0, "staleness_mean": 3.0}).flags == []  # no reward logged


def test_sandbox_failures_are_a_flag_unless_they_are_the_regime() -> None:
    failing = {"sandbox_init_failure_rate": 0.3}
    assert diagnose_metrics({"trainer_idle_ratio": 0.02, **failing}).flags == ["sandbox_failures"]
    bound = diagnose_metrics({"trainer_idle_ratio": 0.7, **failing})
    assert bound.regime == "sandbox_bound" and bound.flags == []


def test_json_shape() -> None:
    doc = diagnose_metrics({"trainer_idle_ratio": 0.5, "generator_admission_idle_ratio": 0.3}).as_json()
    assert set(doc) == {"regime", "flags", "evidence", "levers", "uncertain"}
    assert doc["evidence"][1] == {
        "metric": "generator_admission_idle_ratio",
        "value": 0.3,
        "threshold": 0.2,
        "direction": "above",
        "why": doc["evidence"][1]["why"],
        "role": "regime",
    }
    json.dumps(doc)


# --- the four quickstart regimes, simulated ---------------------------------------------------------------


def test_quickstart_as_shipped_is_generation_bound() -> None:
    d = diagnose_metrics(_quickstart())
    assert d.regime == "generation_bound"
    values = {e.metric: e.value for e in d.evidence}
    assert values["trainer_idle_ratio"] == pytest.approx(0.68, abs=0.01)
    assert values["generator_utilization"] == pytest.approx(0.87, abs=0.01)


def test_more_slots_under_a_staleness_bound_of_2_is_admission_bound() -> None:
    d = diagnose_metrics(_quickstart("sim.concurrency=128"))
    assert d.regime == "admission_bound"
    assert {e.metric: round(e.value, 2) for e in d.evidence if e.role == "regime"} == {
        "trainer_idle_ratio": 0.61,
        "generator_admission_idle_ratio": 0.47,
    }


def test_many_slots_and_a_loose_bound_is_trainer_bound() -> None:
    metrics = _quickstart("sim.concurrency=512", "workload.max_staleness=8")
    assert metrics["staleness_mean"] == pytest.approx(7.9, abs=0.1)
    assert diagnose_metrics(metrics).regime == "trainer_bound"


def test_synchronous_long_tail_is_straggler_bound() -> None:
    metrics = _quickstart('sim.mode="sync"', "workload.max_staleness=0", "sim.latency.cv=1.5")
    d = diagnose_metrics(metrics)
    assert d.regime == "straggler_bound"
    assert metrics["trainer_idle_ratio"] == pytest.approx(0.96, abs=0.01)
    assert metrics["group_straggler_ratio"] == pytest.approx(8.1, abs=0.1)


def test_quickstart_with_throttled_sandbox_creates_is_sandbox_start_bound() -> None:
    """0.5 creates a second feed 64 slots of 60 s rollouts: each rollout queues ~51 s for its sandbox (issue 34)."""
    metrics = _quickstart("sim.sandbox={create_rate=0.5, max_starting=4, start_timeout_s=600}")
    d = diagnose_metrics(metrics)
    assert d.regime == "sandbox_start_bound"
    assert metrics["sandbox_queue_p50_s"] == pytest.approx(51.1, abs=0.5)
    assert metrics["sandbox_start_share"] == pytest.approx(0.47, abs=0.01)
    from benchbed.diagnosis.levers import levers_for

    assert [lever.field for lever in levers_for(d, "sim", {})][:2] == [
        "sim.sandbox.create_rate",
        "sim.sandbox.max_starting",
    ]


def test_a_slow_weight_sync_is_weight_sync_bound() -> None:
    metrics = _quickstart("sim.weight_sync_time=30.0")  # 30 s of sync beside 20 s of compute a step
    assert diagnose_metrics(metrics).regime == "weight_sync_bound"
    assert metrics["trainer_weight_sync_ratio"] == pytest.approx(0.40, abs=0.01)


def test_synchronous_batch_tail_of_small_groups_is_long_tail_bound() -> None:
    """Groups of 4 keep each group's straggler ratio low; the 64-sample batch still waits for its last tenth."""
    metrics = _quickstart('sim.mode="sync"', "workload.max_staleness=0", "sim.latency.cv=0.8",
                          "workload.group_size=4", "workload.prompts_per_step=16")  # fmt: skip
    assert diagnose_metrics(metrics).regime == "long_tail_bound"
    assert metrics["rollout_tail_share"] == pytest.approx(0.53, abs=0.01)
    assert metrics["group_straggler_ratio"] < 4.0


# --- the study's four case studies, as the study describes them ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "overrides", "regime", "flags", "not_flags"),
    [
        ("case1.toml", (), "generation_bound", {"oversampling_discard"}, {"zero_advantage_waste"}),
        ("case2.toml", (), "generation_bound", {"zero_advantage_waste"}, {"oversampling_discard"}),
        ("case3.toml", ("sim.concurrency=960", "matrix={}"), "sandbox_bound", set(), set()),  # the 960 that failed
        ("case3.toml", ("sim.concurrency=256", "matrix={}"), "generation_bound", set(), {"sandbox_failures"}),
        ("case3-phase1.toml", (), "generation_bound", set(), {"sandbox_failures"}),  # 96: the fleet starts fine
        ("case4.toml", (), "generation_bound", {"partial_rollouts"}, set()),
    ],
)
def test_case_studies(case: str, overrides: tuple[str, ...], regime: str, flags: set[str], not_flags: set[str]) -> None:
    d = diagnose_metrics(_metrics(load_spec(REPRODUCE / case, list(overrides))))
    assert d.regime == regime
    assert flags <= set(d.flags) and not (not_flags & set(d.flags))


# --- levers -------------------------------------------------------------------------------------------------------


def _model_of(annotation: object) -> type[BaseModel] | None:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _has_field(model: type[BaseModel], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    if head not in model.model_fields:
        return False
    if not rest:
        return True
    inner = _model_of(model.model_fields[head].annotation)
    return inner is not None and _has_field(inner, rest)


def test_every_lever_is_a_real_spec_field() -> None:
    from benchbed.adapter import get_adapter

    for name, entries in lever_table().items():
        assert name in REGIMES or name in FLAGS, f"levers.toml: [{name}] is neither a regime nor a flag"
        for entry in entries:
            table, _, rest = entry["field"].partition(".")
            model = ExperimentSpec if table in CORE_TABLES else get_adapter(table).options_model
            path = entry["field"] if table in CORE_TABLES else rest
            assert model is not None and _has_field(model, path), f"levers.toml: no spec field {entry['field']}"
            assert entry.get("predict") in (None, "sim.concurrency", "workload.max_staleness")


def test_levers_follow_the_adapter_and_skip_what_is_already_set() -> None:
    from benchbed.diagnosis.levers import levers_for

    admission = diagnose_metrics({"trainer_idle_ratio": 0.5, "generator_admission_idle_ratio": 0.5})
    sync = {"sim": {"mode": "sync"}, "workload": {"max_staleness": 0}}
    fields = [lever.field for lever in levers_for(admission, "sim", sync)]
    assert fields == ["workload.max_staleness", "sim.mode"]
    assert [lever.field for lever in levers_for(admission, "sim", {"sim": {"mode": "async"}})] == [
        "workload.max_staleness"
    ]
    generation = diagnose_metrics({"trainer_idle_ratio": 0.5})
    verl = [lever.field for lever in levers_for(generation, "verl", {"verl": {"concurrency": 64}})]
    assert verl == ["verl.concurrency", "resources.generator_gpus"]
    assert "(now 64)" in levers_for(generation, "verl", {"verl": {"concurrency": 64}})[0].why


# --- the command, run output and the report -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def admission_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchbed.pipeline import execute
    from benchbed.store import Store

    spec = load_spec(QUICKSTART, ["sim.concurrency=128", "workload.steps=60"])
    outcome = execute(spec, Store(tmp_path_factory.mktemp("store")))
    return outcome.run_dir


def test_diagnose_command_predicts_the_main_lever(admission_run: Path) -> None:
    from benchbed.cli.main import cli

    result = CliRunner().invoke(cli, ["diagnose", str(admission_run), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["regime"] == "admission_bound"
    lever = doc["levers"][0]
    assert lever["field"] == "workload.max_staleness" and lever["direction"] == "increase"
    predicted = lever["predicted"]
    assert predicted["metric"] == "trainer_idle_ratio" and predicted["basis"] == "simulation of the run's spec"
    assert predicted["from"] == pytest.approx(doc["evidence"][0]["value"])
    assert predicted["at"] > 2 and predicted["to"] < predicted["from"] - 0.1


def test_diagnose_without_prediction_is_the_record_alone(admission_run: Path) -> None:
    from benchbed.cli.main import cli
    from benchbed.store import read_record

    result = CliRunner().invoke(cli, ["diagnose", str(admission_run), "--json", "--no-predict"])
    doc = json.loads(result.output)
    assert all(lever["predicted"] is None for lever in doc["levers"])
    expected = diagnose_record(read_record(admission_run)).as_json()
    assert {k: v for k, v in doc.items() if k != "run_dir"} == expected


def test_report_opens_with_the_diagnosis(admission_run: Path, tmp_path: Path) -> None:
    from benchbed.cli.main import cli

    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", str(admission_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.index('id="diagnosis"') < html.index('id="runs-overview"')
    assert "admission-bound" in html and "workload.max_staleness" in html
    assert result.output.lstrip().startswith("## Diagnosis")


def test_diagnose_help_names_every_regime() -> None:
    from benchbed.cli.main import cli

    result = CliRunner().invoke(cli, ["diagnose", "--help"], terminal_width=400)
    assert result.exit_code == 0
    assert [regime for regime in REGIMES if regime not in result.output] == []
