"""The comparison's section of the frameworks' own figures: each framework figure beside benchbed's metric of the
same name, each framework's definition from its key map, and a figure that two frameworks both report flagged as
not the same quantity (verl's fully_async idle ratio and slime's wait-time ratio are defined differently)."""

from __future__ import annotations

from benchbed.adapter import FigureDefinition, get_adapter
from benchbed.report.comparison import build_comparison, markdown_comparison

from .conftest import _fixture_run


def _runs():
    return [_fixture_run("verl", "verl/verl-0.9.1-fully_async"), _fixture_run("slime", "slime/fully_async_swe")]


def test_definitions_come_from_the_key_maps() -> None:
    assert get_adapter("slime").figure_definitions() == {
        "framework_trainer_idle_ratio": FigureDefinition("perf/wait_time_ratio", "ratio"),
        "framework_off_policy_token_share": FigureDefinition(
            "partial_rollout/off_policy_ratio: APRIL's per-rollout figure; benchbed's off_policy_token_share weighs "
            "the rollouts by their tokens",
            "ratio",
        ),
    }
    assert get_adapter("prime_rl").figure_definitions()["framework_staleness_mean"] == FigureDefinition(
        "off_policy_level/all/mean; off_policy/mean", "versions"
    )
    starvation = get_adapter("nemo_rl").figure_definitions()["framework_buffer_starvation_s"]
    assert starvation.unit == "s" and starvation.text.startswith("efficiency/idle/buffer_starvation_s: ")
    assert get_adapter("nemo_rl").figure_definitions()["framework_efficiency_ratio"].unit == "ratio"  # logged in %
    assert get_adapter("sim").figure_definitions() == {}


def test_a_figure_two_frameworks_report_is_flagged_and_shown_beside_benchbeds() -> None:
    figures = build_comparison(_runs()).framework_figures
    assert figures is not None
    rows = {row[0]: row[2:] for row in figures.table.rows}
    assert rows["framework_trainer_idle_ratio"] == ("0.1848 (single run) n=1", "0.6 (single run) n=1")
    assert rows["trainer_idle_ratio (benchbed)"] == ("0.1856 (single run) n=1", "0.58 (single run) n=1")
    assert rows["framework_mixed_policy_fraction"] == ("0.3333 (single run) n=1", "—")
    assert figures.notes[0] == (
        "framework_trainer_idle_ratio is not the same quantity across verl, slime: each framework defines its own "
        "(verl: fully_async/trainer/idle_ratio; slime: perf/wait_time_ratio); benchbed's trainer_idle_ratio is "
        "computed one way for every run."
    )
    assert figures.notes[1].startswith("framework_mixed_policy_fraction, verl: fully_async/partial/partial_ratio: ")


def test_the_markdown_summary_carries_the_figures_and_their_notes() -> None:
    text = markdown_comparison([record for record, _ in _runs()])
    assert "### The frameworks' own figures" in text
    assert "| framework_trainer_idle_ratio | ratio | 0.1848 (single run) n=1 | 0.6 (single run) n=1 |" in text
    assert "- framework_trainer_idle_ratio is not the same quantity across verl, slime" in text


def test_runs_without_framework_figures_have_no_section(sim_run) -> None:
    assert build_comparison([sim_run("a", 4), sim_run("b", 4)]).framework_figures is None


def test_a_figure_no_benchbed_metric_stands_for_takes_its_unit_from_the_key_map() -> None:
    figures = build_comparison([_fixture_run("nemo_rl", "nemo_rl/async-6-steps"), *_runs()]).framework_figures
    assert figures is not None
    units = {row[0]: row[1] for row in figures.table.rows}
    assert (units["framework_buffer_starvation_s"], units["framework_efficiency_ratio"]) == ("s", "ratio")
