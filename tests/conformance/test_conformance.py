"""Every registered adapter passes the same checks: the contract it declares, rendering the experiments under
experiments/ (or refusing clearly), reading its own runs into a valid trace whose steps, versions and components
follow docs/reference/trace.md, metrics without NaN and with ratios in [0, 1], and
refusing every other adapter's runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from benchbed import keys as K
from benchbed.adapter import Adapter, LaunchPlan, available_adapters, get_adapter
from benchbed.errors import BenchbedError, NotThisFrameworkError
from benchbed.metrics import METRICS, compute_metrics
from benchbed.metrics.context import MetricContext
from benchbed.metrics.trainer import step_breakdown
from benchbed.pipeline import ingest
from benchbed.spec import ExperimentSpec, expand, load_spec, load_spec_data
from benchbed.store import Store
from benchbed.trace import Trace

ROOT = Path(__file__).resolve().parents[2]
# experiment specs (suites such as nightly-*.toml list specs instead of naming an adapter)
EXPERIMENTS = sorted(p for p in (ROOT / "experiments").glob("*.toml") if "adapter" in load_spec_data(p))
ADAPTERS = available_adapters()
# Components may exceed their step by this fraction before it counts as overlap: the step's timer and the
# components' timers are read separately, so they drift apart by up to a few percent in real runs.
COMPONENT_TOLERANCE = 0.05


@pytest.mark.parametrize("name", ADAPTERS)
def test_declares_the_contract(name: str) -> None:
    adapter = get_adapter(name)
    assert isinstance(adapter, Adapter) and adapter.name == name
    model = adapter.options_model
    if model is not None:
        assert issubclass(model, BaseModel) and model.model_config.get("extra") == "forbid"
    assert adapter.table not in ExperimentSpec.model_fields, "an adapter's table cannot be a core spec field"


@pytest.mark.parametrize("name", ADAPTERS)
def test_renders_the_experiments_or_refuses_clearly(name: str, tmp_path: Path) -> None:
    adapter = get_adapter(name)
    for path in EXPERIMENTS:
        for spec in expand(load_spec(path, [f'adapter="{name}"']), str(path)):
            before = spec.spec_id
            try:
                plan = adapter.render(spec, tmp_path)
            except BenchbedError as exc:  # e.g. a checkout or credentials this machine lacks
                assert len(str(exc).strip()) > 20, f"{path}: {name!r} refused without saying why: {exc!r}"
                continue
            assert isinstance(plan, LaunchPlan) and plan.argv
            assert spec.spec_id == before, f"{path}: rendering changed the spec"


def _check_trace(name: str, run: Path, trace: Trace) -> None:
    trace.validate()
    events = trace.events
    steps = events["step"].to_numpy()
    bad = np.flatnonzero((steps != -1) & (steps < 1))
    assert not len(bad), f"{run}: row {bad[0]} has step {steps[bad[0]]}; steps are numbered from 1 (-1 = none)"
    rollouts = events[(events["key"] == K.ROLLOUT) & (events["status"] == "ok")]
    versioned = rollouts[(rollouts["step"] >= 1) & (rollouts["v_train"] >= 0)]
    wrong = versioned[versioned["v_train"] != versioned["step"] - 1]
    assert not len(wrong), f"{run}: row {wrong.index[0]}: v_train {wrong['v_train'].iloc[0]} in step " \
        f"{wrong['step'].iloc[0]}; a sample trained in step k has v_train = k - 1"  # fmt: skip
    breakdown = step_breakdown(MetricContext(trace, warmup_steps=0))
    over = {s: r for s, r in (breakdown.overlap if breakdown else {}).items() if r > 1 + COMPONENT_TOLERANCE}
    assert not over, f"{run}: trainer components exceed the step by more than {COMPONENT_TOLERANCE:.0%}: {over}"


def _check_metrics(run: Path, trace: Trace) -> None:
    warnings: list[str] = []
    metrics = compute_metrics(trace, warmup_steps=0, warnings=warnings)
    for metric, value in metrics.items():
        assert math.isfinite(value.value), f"{run}: {metric} = {value.value}"
        unit = METRICS[metric].unit if metric in METRICS else value.unit
        if unit == "ratio" and value.source != "framework":
            assert 0.0 <= value.value <= 1.0, f"{run}: ratio {metric} = {value.value} outside [0, 1]"
    assert not [w for w in warnings if "negative staleness" in w], f"{run}: {warnings}"


@pytest.mark.parametrize("name", ADAPTERS)
def test_reads_its_own_runs(name: str, own_runs, tmp_path: Path) -> None:
    runs = own_runs(name)
    assert runs, f"adapter {name!r} has no runs to check; list its fixtures in tests/conformance/own_fixtures.py"
    adapter = get_adapter(name)
    for run in runs:
        trace = adapter.parse(run)
        assert trace.meta.adapter == name, f"{run}: trace says it was written by {trace.meta.adapter!r}"
        _check_trace(name, run, trace)
        _check_metrics(run, trace)
    outcome = ingest(runs[0], name, Store(tmp_path / "results"), warmup_steps=0)  # the record as stored
    json.loads((outcome.run_dir / "record.json").read_text(), parse_constant=_refuse_non_finite)


def _refuse_non_finite(constant: str) -> None:
    raise AssertionError(f"record.json holds {constant}")


@pytest.mark.parametrize("name", ADAPTERS)
def test_refuses_every_other_adapters_runs(name: str, own_runs) -> None:
    adapter = get_adapter(name)
    accepted = []
    for other in ADAPTERS:
        if other == name:
            continue
        for run in own_runs(other):
            try:
                adapter.parse(run)
            except NotThisFrameworkError:
                continue
            except BenchbedError as exc:
                accepted.append(f"{run} ({other}): {type(exc).__name__}, not NotThisFrameworkError: {exc}")
                continue
            accepted.append(f"{run} ({other}): parsed as a {name} run")
    assert not accepted, "\n".join(accepted)


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_run_gets_a_diagnosis_or_says_why_not(name: str, own_runs) -> None:
    from benchbed.diagnosis import REGIMES
    from benchbed.diagnosis.rules import diagnose_metrics

    adapter = get_adapter(name)
    for run in own_runs(name):
        metrics = {k: v.value for k, v in compute_metrics(adapter.parse(run), warmup_steps=0).items()}
        diagnosis = diagnose_metrics(metrics)
        assert diagnosis.regime in REGIMES, f"{run}: {diagnosis.regime}"
        if diagnosis.regime == "unknown":
            assert diagnosis.uncertain and diagnosis.headline().startswith("cannot tell: "), f"{run}"
        else:
            assert any(e.role == "regime" for e in diagnosis.evidence), f"{run}: a regime with no evidence"
