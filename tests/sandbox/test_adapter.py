"""The `sandbox` adapter: the case-study specs render into a sandbox-bench launch whose trace it parses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchbed.adapters.sandbox_bench import CONFIG_FILE, bench_config

from benchbed.adapter import get_adapter
from benchbed.errors import NotThisFrameworkError, SpecError
from benchbed.metrics import compute_metrics
from benchbed.metrics.series import sandbox_starts
from benchbed.sandbox.bench import BenchConfig, main
from benchbed.spec import ExperimentSpec, expand, load_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("name", "backend", "levels"), [
    ("sandbox-scaling.toml", "local", [1, 32, 96, 256, 960]),
    ("sandbox-scaling-modal.toml", "modal", [96, 256, 360, 960]),
])  # fmt: skip
def test_case_study_specs_render(name, backend, levels, tmp_path):
    specs = expand(load_spec(ROOT / "experiments" / name))
    assert len(specs) == 2
    for spec in specs:
        spec_id = spec.spec_id
        plan = get_adapter("sandbox").render(spec, tmp_path)
        cfg = BenchConfig.model_validate_json(plan.files[CONFIG_FILE])
        assert cfg.backend == backend and cfg.levels == levels and cfg.per_level is None and cfg.retries == 0
        assert cfg.max_starting == spec.sandbox.max_starting
        assert plan.argv[1:3] == ["-m", "benchbed.sandbox.bench"]
        assert spec.spec_id == spec_id  # rendering leaves the spec (and so its id) unchanged


def test_modal_spec_keeps_its_image_and_outlives_the_init_budget():
    cfg = bench_config(expand(load_spec(ROOT / "experiments" / "sandbox-scaling-modal.toml"))[0])
    assert cfg.sandbox.image == "python:3.11-slim" and cfg.sandbox.lifetime_s > cfg.start_timeout_s == 900
    assert cfg.program[0] == "python3" and not cfg.baseline


def test_spec_without_backend_is_refused():
    with pytest.raises(SpecError, match="backend"):
        bench_config(ExperimentSpec(name="x", adapter="sandbox"))


@pytest.mark.usefixtures("no_leaks")
def test_launch_writes_a_trace_the_adapter_parses(tmp_path):
    cfg = BenchConfig(levels=[1, 3], program=["/bin/echo", "x"], baseline=False)
    (tmp_path / CONFIG_FILE).write_text(cfg.model_dump_json())
    assert main(["--config", str(tmp_path / CONFIG_FILE), "--out", str(tmp_path)]) == 0
    trace = get_adapter("sandbox").parse(tmp_path)
    starts = trace.of("sandbox.start")
    assert sorted(json.loads(a)["level"] for a in starts["attrs"]) == [1, 3, 3, 3]
    metrics = compute_metrics(trace, warmup_steps=0)
    assert metrics["sandbox_init_failure_rate"].value == 0.0
    assert trace.meta.extra["sandbox_bench"]["measured"][1]["n"] == 3
    table = sandbox_starts(trace)
    assert list(table["level"]) == [1, 3, 3, 3] and (table["status"] == "ok").all()
    assert table[table["level"] == 3]["start_s"].is_monotonic_increasing


def test_parse_refuses_other_inputs(tmp_path):
    with pytest.raises(NotThisFrameworkError):
        get_adapter("sandbox").parse(tmp_path)
