"""`benchbed calibrate`: the fitted spec round-trips the run's own idle and staleness, and says what it assumed."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.metrics import compute_metrics
from benchbed.pipeline import ingest
from benchbed.sim import simulate_spec
from benchbed.sim.calibrate import beta_from_group_means, calibrate, lognormal_fit
from benchbed.spec import build_spec, load_spec
from benchbed.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"


def simulate_calibrated(cal) -> dict[str, float]:
    spec = build_spec(cal.spec_data())
    return {k: v.value for k, v in compute_metrics(simulate_spec(spec), warmup_steps=spec.warmup_steps).items()}


def test_lognormal_fit_and_beta_moments_recover_known_parameters():
    rng = np.random.default_rng(0)
    sigma2 = np.log1p(0.5**2)
    fit = lognormal_fit(rng.lognormal(np.log(60) - sigma2 / 2, np.sqrt(sigma2), 20000))
    assert fit["mean"] == pytest.approx(60, rel=0.02) and fit["cv"] == pytest.approx(0.5, rel=0.03)
    assert fit["ks"] < 0.02
    p = rng.beta(2.0, 3.0, 20000)
    means = rng.binomial(8, p) / 8
    a, b = beta_from_group_means(means, 8)
    assert a == pytest.approx(2.0, rel=0.1) and b == pytest.approx(3.0, rel=0.1)


def test_quickstart_round_trips_idle_and_staleness(tmp_path):
    spec = load_spec(QUICKSTART, ["workload.steps=80"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    simulate_spec(spec).write(run_dir)
    cal = calibrate(run_dir)
    assert cal.missing == [] or all("fitted" in line for line in cal.missing)
    assert cal.lognormal["mean"] == pytest.approx(60.0, rel=0.05)
    sim = simulate_calibrated(cal)
    assert sim["trainer_idle_ratio"] == pytest.approx(cal.observed["trainer_idle_ratio"], abs=0.03)
    assert sim["staleness_mean"] == pytest.approx(cal.observed["staleness_mean"], rel=0.10)


def test_prime_rl_fixture_round_trips_and_a_metrics_only_fixture_says_what_it_assumed(tmp_path):
    store = Store(tmp_path / "store")
    run = ingest(FIXTURES / "prime_rl" / "head-559b447", "prime_rl", store).run_dir
    cal = calibrate(run)
    sim = simulate_calibrated(cal)
    assert sim["trainer_idle_ratio"] == pytest.approx(cal.observed["trainer_idle_ratio"], abs=0.03)
    # 5 window steps of 8 samples: staleness is too coarse for a 10% round trip, and calibrate says so.
    assert any(re.match(r"staleness_mean: only \d+ trained samples", line) for line in cal.missing)
    bare = ingest(FIXTURES / "verl" / "verl-0.9.1-v1_separate_async", "verl", store).run_dir
    cal = calibrate(bare)
    assert any(line.startswith("sim.latency: mean fitted by simulation") for line in cal.missing)
    assert any(line.startswith("sim.concurrency: no rollout spans") for line in cal.missing)
    assert simulate_calibrated(cal)["trainer_idle_ratio"] == pytest.approx(cal.observed["trainer_idle_ratio"],
                                                                           abs=0.03)  # fmt: skip


def test_calibrate_cli_writes_a_spec_that_runs_with_what_if_overrides(tmp_path):
    spec = load_spec(QUICKSTART, ["workload.steps=30"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    simulate_spec(spec).write(run_dir)
    out = tmp_path / "calibrated.toml"
    result = CliRunner().invoke(cli, ["calibrate", str(run_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "concurrency = 64  # trace metadata" in text and "[sim.latency]" in text
    what_if = load_spec(out, ["sim.concurrency=128"])
    assert what_if.sim["concurrency"] == 128


def test_the_round_trip_covers_every_headline_metric_and_flags_one_that_is_off(tmp_path):
    """Every headline metric the run has is compared with its calibrated twin's; a figure off by more than 10%
    (or 0.02) is flagged, such as `benchbed demo --real`'s generator_utilization (0.46 run, 0.007 twin)."""
    from benchbed.metrics.registry import headline_metrics
    from benchbed.sim.calibrate import RoundTrip, round_trip

    spec = load_spec(QUICKSTART, ["workload.steps=80"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    trace = simulate_spec(spec)
    trace.write(run_dir)
    run = compute_metrics(trace, warmup_steps=spec.warmup_steps)
    rows = round_trip(calibrate(run_dir))
    assert [r.metric for r in rows] == [m for m in headline_metrics() if m in run]
    assert {r.metric: r.run for r in rows} == pytest.approx({m: run[m].value for m in headline_metrics() if m in run})
    off = {r.metric for r in rows if not r.ok}
    assert off <= {"staleness_max"}  # a simulator calibrated to a simulated run reproduces it
    demo = RoundTrip("generator_utilization", 0.46, 0.007)
    assert not demo.ok and demo.line() == (
        "round trip generator_utilization: run 0.46, calibrated spec 0.007 (OFF by more than ±0.046)"
    )
    assert RoundTrip("trainer_idle_ratio", 0.01, 0.025).ok  # within the 0.02 floor near 0
    assert RoundTrip("sandbox_start_p50_s", 0.18, None).line().endswith("not produced by the calibrated spec")
