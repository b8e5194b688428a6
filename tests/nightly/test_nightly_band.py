"""The reference band (MLPerf-RCP style) and untrusted nights: hand-computed bands, marks kept as a log, a night
marked untrusted leaving the baseline, and `benchbed untrust` against a store."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.errors import SpecError, StoreError
from benchbed.gate import GateSettings
from benchbed.nightly.history import POINT_COLUMNS, build_series
from benchbed.nightly.stats import compare_to_band
from benchbed.nightly.suite import load_suite
from benchbed.nightly.trust import MARKS_PATH, mark_night, read_marks, untrusted_nights
from benchbed.record import Gate

REWARDS = [0.30, 0.31, 0.29, 0.305]  # four trusted nights of final_reward_mean


def test_the_band_is_the_mean_plus_or_minus_two_sd_or_the_least_width() -> None:
    mean, sd = statistics.fmean(REWARDS), statistics.stdev(REWARDS)  # by hand: 0.30125 and 0.00854
    low = mean - 2 * sd
    below = compare_to_band(REWARDS, [low - 1e-3], higher_is_better=True, min_width=0.0)
    assert below.verdict == "regression" and below.p_value is None and below.n_baseline == 4
    assert f"{low:.4g}..{mean + 2 * sd:.4g}" in below.reason and "worse" in below.reason
    assert compare_to_band(REWARDS, [low + 1e-3], True, 0.0).verdict == "unchanged"
    assert compare_to_band(REWARDS, [mean + 2 * sd + 1e-3], True, 0.0).verdict == "improvement"
    # the least width: 10% of the mean is wider than 2 sd, so 0.28 is inside and 0.27 below
    assert 0.1 * mean > 2 * sd
    assert compare_to_band(REWARDS, [0.28], True, 0.1).verdict == "unchanged"
    assert compare_to_band(REWARDS, [0.27], True, 0.1).verdict == "regression"
    # lower is better (steps to a target): above the band is worse
    assert compare_to_band([10, 12, 11], [20], False, 0.1).verdict == "regression"
    # identical reference values: the band is the least width wide, never zero
    assert compare_to_band([1.0, 1.0, 1.0], [0.0], True, 0.5).verdict == "regression"  # target never reached
    assert compare_to_band([1.0, 1.0, 1.0], [1.0], True, 0.5).verdict == "unchanged"


def test_a_band_needs_three_reference_values_and_a_candidate() -> None:
    few = compare_to_band([0.3, 0.31], [0.1], True, 0.1)
    assert few.verdict == "insufficient_data" and "2 trusted reference value(s); a band needs 3" in few.reason
    none = compare_to_band(REWARDS, [float("nan")], True, 0.1)
    assert none.verdict == "insufficient_data" and none.reason == "no candidate values"


def _points(values: list[float], gate: Gate) -> pd.DataFrame:
    rows = [{"machine": "box", "suite": "s", "entry": "learn", "night": f"n{n}", "run_id": f"r{n}",
             "started_at": f"2026-01-0{n + 1}T02:00:00+00:00", "repeat": 0, "spec_id": "spec-a", "adapter": "ref",
             "framework": "benchbed-ref", "framework_version": "1", "benchbed_commit": "abc",
             "watch": "final_reward_mean", "gate": gate.model_dump_json(), "metric": "final_reward_mean",
             "value": value, "unit": "reward", "path": ""} for n, value in enumerate(values)]  # fmt: skip
    return pd.DataFrame(rows, columns=list(POINT_COLUMNS))


def test_a_banded_metric_is_judged_by_its_band_with_one_run_a_night_and_untrusted_nights_leave_it() -> None:
    gate = Gate(band={"final_reward_mean": 0.1})
    frame = _points([*REWARDS, 0.21], gate)
    (series,) = build_series(frame)
    assert series.verdict.verdict == "regression" and "outside the reference band" in series.verdict.comparison.reason
    # the rank test cannot judge one value a night against four: the band is what makes a night of one run count
    (ranked,) = build_series(_points([*REWARDS, 0.21], Gate()))
    assert ranked.verdict.verdict == "insufficient_data"
    # a bad night among the references (0.10) widens the band until it is marked untrusted
    frame = _points([0.30, 0.10, 0.31, 0.29, 0.305, 0.21], gate)
    (polluted,) = build_series(frame)
    assert polluted.verdict.verdict == "unchanged"
    (cleaned,) = build_series(frame, untrusted={"n1"})
    assert cleaned.verdict.verdict == "regression" and cleaned.verdict.comparison.n_baseline == 4
    assert cleaned.verdict.comparison.baseline_median == pytest.approx(statistics.median(REWARDS))


def test_untrusted_nights_do_not_count_toward_the_baseline_nights_of_the_rank_test() -> None:
    (series,) = build_series(_points([1.0, 1.0, 9.0, 9.0, 9.0, 1.0], Gate(nights=2)), untrusted={"n3", "n4"})
    assert series.verdict.comparison.n_baseline == 2  # n2 and n1 (n0 is beyond the 2 nights), not n3 and n4
    assert series.verdict.comparison.baseline_median == 5.0


def test_gate_settings_carry_the_band_as_recorded() -> None:
    recorded = Gate(band={"target_reached": 0.5}, band_sd=3.0).model_dump_json()
    assert GateSettings.from_json(recorded) == GateSettings(band={"target_reached": 0.5}, band_sd=3.0)


def test_marks_are_a_log_where_the_last_line_about_a_night_decides(tmp_path: Path) -> None:
    assert untrusted_nights(tmp_path) == {} and read_marks(tmp_path) == []
    mark_night(tmp_path, "n1", "node 3 lost a GPU")
    mark_night(tmp_path, "n2", "driver 575 regression")
    mark_night(tmp_path, "n1", "the GPU was fine", trusted=True)
    assert untrusted_nights(tmp_path) == {"n2": "driver 575 regression"}
    lines = (tmp_path / MARKS_PATH).read_text().splitlines()
    assert [json.loads(line)["night"] for line in lines] == ["n1", "n2", "n1"]


def test_a_damaged_marks_log_is_named_with_its_line_and_not_extended(tmp_path: Path) -> None:
    mark_night(tmp_path, "n1", "bad node")
    path = tmp_path / MARKS_PATH
    path.write_text(path.read_text() + '{"night": "n2"}\n')
    with pytest.raises(StoreError, match=rf"{path}:2: expected a JSON object with night, trusted") as raised:
        untrusted_nights(tmp_path)
    assert "\n" not in str(raised.value)
    with pytest.raises(StoreError):
        mark_night(tmp_path, "n3", "another")
    assert len(path.read_text().splitlines()) == 2


def test_a_band_on_a_metric_without_direction_or_not_watched_is_refused(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"
    (tmp_path / "q.toml").write_text(spec.read_text())
    for band, watch, says in [
        ("{ partial_resumed_fraction = 0.1 }", "", "not a metric with a better direction"),
        ("{ staleness_mean = 0.1 }", 'watch = ["trainer_idle_ratio"]\n',
         "add it to the entry's watch (trainer_idle_ratio)"),
    ]:  # fmt: skip
        suite = tmp_path / "suite.toml"
        suite.write_text(f'name = "s"\n[[entry]]\nname = "e"\nspec = "q.toml"\n{watch}gate = {{ band = {band} }}\n')
        with pytest.raises(SpecError, match=f"entry 'e': gate.band.*{says.replace('(', '.').replace(')', '.')}"):
            load_suite(suite)


def test_untrust_marks_a_stored_night_and_history_leaves_it_out(tmp_path: Path) -> None:
    store = tmp_path / "store"
    suite = tmp_path / "suite.toml"
    spec = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"
    (tmp_path / "q.toml").write_text(spec.read_text())
    suite.write_text('name = "s"\n[[entry]]\nname = "e"\nspec = "q.toml"\nrepeats = 1\nset = ["workload.steps=20"]\n'
                     'watch = ["trainer_throughput_sps"]\n')  # fmt: skip
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(cli, ["nightly", str(suite), "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
    history = json.loads(runner.invoke(cli, ["history", "--store", str(store), "--json"]).stdout)
    nights = [n["night"] for n in history["series"][0]["nights"]]
    assert history["untrusted"] == {} and len(nights) == 2
    missing = runner.invoke(cli, ["untrust", "nosuch", "--reason", "x", "--store", str(store)])
    assert missing.exit_code == 2 and "nosuch: no night of that id" in missing.output
    marked = runner.invoke(cli, ["untrust", nights[0], "--reason", "the host was swapping", "--store", str(store)])
    assert marked.exit_code == 0, marked.output
    history = json.loads(runner.invoke(cli, ["history", "--store", str(store), "--json"]).stdout)
    assert history["untrusted"] == {nights[0]: "the host was swapping"}
    verdict = history["series"][0]["last_verdict"]
    assert verdict["n_baseline"] == 0 and verdict["verdict"] == "insufficient_data"  # its only baseline night
    text = runner.invoke(cli, ["history", "--store", str(store)]).stdout
    assert f"untrusted (no baseline): {nights[0]}: the host was swapping" in text
    undone = runner.invoke(cli, ["untrust", nights[0], "--undo", "--reason", "fine after all", "--store", str(store)])
    assert undone.exit_code == 0 and "trusted again" in undone.output
    history = json.loads(runner.invoke(cli, ["history", "--store", str(store), "--json"]).stdout)
    assert history["untrusted"] == {} and history["series"][0]["last_verdict"]["n_baseline"] == 1
    newest = runner.invoke(cli, ["untrust", "latest", "--reason", "a driver update", "--store", str(store)])
    assert newest.exit_code == 0 and f"{max(nights)}: untrusted" in newest.output
    history = json.loads(runner.invoke(cli, ["history", "--store", str(store), "--json"]).stdout)
    assert history["untrusted"] == {max(nights): "a driver update"}
