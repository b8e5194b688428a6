"""Nightly summaries open with each entry's diagnosis and say when it changed since the night before (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.nightly.regimes import entry_regimes

REPO = Path(__file__).resolve().parents[2]
SUITE = """
name = "regimes"
[[entry]]
name = "qs"
spec = "quickstart.toml"
repeats = 1
set = ["workload.steps=40"]
watch = ["trainer_idle_ratio"]
"""


def _frame(runs: list[tuple[str, str, str, dict[str, float]]]) -> pd.DataFrame:
    """Catalog points: one row per (run, metric), as `load_points` returns them."""
    rows = [(entry, night, run_id, name, value) for entry, night, run_id, metrics in runs
            for name, value in metrics.items()]  # fmt: skip
    return pd.DataFrame(rows, columns=["entry", "night", "run_id", "metric", "value"])


GENERATION = {"trainer_idle_ratio": 0.6, "generator_utilization": 0.9, "generator_admission_idle_ratio": 0.0}
TRAINER = {"trainer_idle_ratio": 0.02, "zero_adv_group_fraction": 0.4}


def test_the_majority_of_tonights_repeats_and_the_change_since_the_night_before() -> None:
    points = _frame([
        ("a", "n0", "r0", TRAINER),  # an older night: not the one before tonight, so it decides nothing
        ("a", "n1", "r1", GENERATION), ("a", "n1", "r2", GENERATION),
        ("a", "n2", "r3", TRAINER), ("a", "n2", "r4", TRAINER), ("a", "n2", "r5", GENERATION),
        ("b", "n2", "r6", GENERATION),
    ])  # fmt: skip
    a, b = entry_regimes(points, ["a", "b", "never-ran"], "n2")
    assert (a.regime, a.flags, a.previous, a.changed) == ("trainer_bound", ("zero_advantage_waste",),
                                                          "generation_bound", True)  # fmt: skip
    assert a.sentence() == ("a: trainer-bound (zero advantage waste); "
                            "the diagnosis changed from generation-bound to trainer-bound")  # fmt: skip
    assert (b.regime, b.previous, b.changed) == ("generation_bound", None, False)
    assert b.sentence() == "b: generation-bound"
    (first,) = entry_regimes(points, ["a"], "n1")
    assert (first.regime, first.previous) == ("generation_bound", "trainer_bound")
    (zeroth,) = entry_regimes(points, ["a"], "n0")
    assert zeroth.previous is None and zeroth.regime == "trainer_bound"


def test_nightly_summary_page_and_json_open_with_the_diagnosis_and_its_change(tmp_path: Path) -> None:
    (tmp_path / "quickstart.toml").write_text((REPO / "experiments" / "quickstart.toml").read_text())
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE)
    store = tmp_path / "store"
    env = {"BENCHBED_MACHINE": "ci-box"}
    first = CliRunner().invoke(cli, ["nightly", str(suite), "--store", str(store)], env=env)
    assert first.exit_code == 0, first.output
    summary = first.stdout.split("\n")
    assert summary[2] == "Diagnosis:" and summary[3] == "- qs: generation-bound (zero advantage waste)"
    trainer_bound = ["--set", "sim.concurrency=512", "--set", "workload.max_staleness=8"]
    second = CliRunner().invoke(cli, ["nightly", str(suite), "--store", str(store), "--json", *trainer_bound], env=env)
    assert second.exit_code == 0, second.output
    (diagnosis,) = json.loads(second.stdout)["diagnosis"]
    assert diagnosis == {"entry": "qs", "regime": "trainer_bound", "flags": ["zero_advantage_waste"],
                         "previous": "generation_bound", "changed": True}  # fmt: skip
    last = sorted((store / "_nightly" / "ci-box" / "regimes").iterdir())[-1]
    changed = "the diagnosis changed from generation-bound to trainer-bound"
    assert changed in (last / "summary.md").read_text()
    page = (last / "nightly.html").read_text()
    assert page.index('id="diagnosis"') < page.index('id="verdicts"') and changed in page
