"""`benchbed plan`: the simulated boundary value meets the target, the one before it does not, and the closed
form is close where its assumptions hold."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.errors import SpecError
from benchbed.sim.plan import parse_target, plan, simulate_metric, with_value
from benchbed.spec import build_spec

SPEC = {
    "name": "plan-test", "adapter": "sim", "warmup_steps": 2,
    "workload": {"prompts_per_step": 8, "group_size": 4, "max_staleness": 16, "steps": 60},
    "sim": {"mode": "async", "concurrency": 32, "latency": {"mean": 30.0, "cv": 0.3}, "train_step_time": 10.0,
            "weight_sync_time": 0.0, "seed": 1},
}  # fmt: skip


def test_targets_are_parsed_and_checked():
    target = parse_target("trainer_idle_ratio <= 0.1")
    assert target.met(0.1) and not target.met(0.11) and not target.met(None)
    with pytest.raises(SpecError, match="expected METRIC<=VALUE"):
        parse_target("idle is small")
    with pytest.raises(SpecError, match="unknown metric 'idle'"):
        parse_target("idle<=0.1")


def test_concurrency_answer_is_the_boundary_and_matches_the_closed_form():
    spec = build_spec(SPEC)
    target = parse_target("trainer_idle_ratio<=0.2")
    result = plan(spec, target, "sim.concurrency")
    # D2: C >= (1 - 0.2) · B · W / T = 0.8 · 32 · 30 / 10 = 76.8
    assert result.closed_form == pytest.approx(76.8)
    assert result.answer == pytest.approx(76.8, rel=0.1)
    assert result.holds and target.met(simulate_metric(with_value(spec, "sim.concurrency", result.answer),
                                                       "trainer_idle_ratio"))  # fmt: skip
    assert not target.met(simulate_metric(with_value(spec, "sim.concurrency", result.answer - 1),
                                          "trainer_idle_ratio"))  # fmt: skip


def test_staleness_budget_answer_and_the_largest_value_for_an_upper_bound_on_staleness():
    spec = build_spec({**SPEC, "sim": {**SPEC["sim"], "concurrency": 128}})
    idle = plan(spec, parse_target("trainer_idle_ratio<=0.1"), "workload.max_staleness", 0, 16)
    assert idle.answer is not None and idle.holds and idle.answer >= 1
    stale = plan(spec, parse_target("staleness_mean<=1.5"), "workload.max_staleness", 0, 16)
    assert stale.note == "largest value meeting the target" and stale.holds


def test_plan_cli_json_and_plot(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('name = "p"\nadapter = "sim"\nwarmup_steps = 2\n[workload]\nprompts_per_step = 8\n'
                    'group_size = 4\nmax_staleness = 16\nsteps = 40\n[sim]\nconcurrency = 32\n'
                    'latency = { mean = 30.0, cv = 0.3 }\ntrain_step_time = 10.0\n')  # fmt: skip
    html = tmp_path / "plan.html"
    result = CliRunner().invoke(cli, ["plan", str(path), "--target", "trainer_idle_ratio<=0.3", "--vary",
                                      "sim.concurrency", "--range", "8:256", "--json", "-o", str(html)])  # fmt: skip
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["holds"] and 8 <= answer["answer"] <= 256 and answer["plot"] == str(html)
    page = html.read_text()
    assert "<svg" in page and "closed form" in page
    bad = CliRunner().invoke(cli, ["plan", str(path), "--target", "idle<=0.3", "--vary", "sim.concurrency"])
    assert bad.exit_code == 2 and "unknown metric 'idle'" in bad.output


def test_the_closed_form_takes_the_windows_mean_trainer_time_under_drift():
    drift = {"every_pushes": 20, "factors": [0.5, 1.5]}
    spec = build_spec({**SPEC, "sim": {**SPEC["sim"], "train_time_drift": drift}})
    result = plan(spec, parse_target("trainer_idle_ratio<=0.2"), "sim.concurrency")
    # window = steps 3..60: steps 3-20 take factor 0.5, steps 21-60 the last factor, 1.5 (step s follows s - 1
    # pushes); T = 10 · (18 · 0.5 + 40 · 1.5) / 58 = 11.897 s; D2: C >= 0.8 · 32 · 30 / T = 64.56
    assert result.closed_form == pytest.approx(0.8 * 32 * 30 / (10 * 69 / 58))
    assert result.answer == pytest.approx(result.closed_form, rel=0.1)  # simulated 69; without the drift, 76.8
