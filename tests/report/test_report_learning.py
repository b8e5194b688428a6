"""The comparison's learning figure: each run's logged training reward against wall time and GPU-hours, drawn from
ingested verl fixture runs (a target and GPU counts given as a user gives them to `benchbed ingest`)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from benchbed.pipeline import ingest
from benchbed.report import write_report
from benchbed.report.comparison import markdown_comparison
from benchbed.store import Store
from benchbed.trace import TRACE_FILENAME, read_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verl"
GPUS = {"trainer_gpus": 8, "generator_gpus": 8, "gpus_per_node": 8, "colocated": False, "gpu": "H200"}


def _figure(html: str, key: str) -> str:
    match = re.search(rf'<section class="compare-plot" id="compare-{key}".*?</section>', html, re.DOTALL)
    assert match, f"comparison figure {key} missing"
    return match.group(0)


def _ingested(tmp_path: Path, names: tuple[str, ...], resources: dict | None, target: str = "reward>=0.5") -> list:
    store = Store(tmp_path / "store")
    outcomes = [ingest(FIXTURES / f"verl-0.9.1-{name}", "verl", store, resources=resources,
                       quality_target=target) for name in names]  # fmt: skip
    return [(o.record, read_trace(o.run_dir / TRACE_FILENAME)) for o in outcomes]


def test_reward_against_time_and_gpu_hours_with_the_shared_target(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    write_report(_ingested(tmp_path, ("v0", "one_step_off"), GPUS), page)
    figure = _figure(page.read_text(), "learning")
    assert "Training reward against time and GPU-hours" in figure
    assert "wall time since the first step began" in figure and "GPU-hours (trainer + generator GPUs" in figure
    assert "training reward (mean per step)" in figure and "quality target" in figure
    assert figure.count("(1 run)") == 2  # one legend entry per group


def test_without_gpu_counts_only_the_time_panel_and_without_rewards_a_sentence(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    runs = _ingested(tmp_path, ("v0", "one_step_off"), None)
    write_report(runs, page)
    figure = _figure(page.read_text(), "learning")
    assert "Training reward against time" in figure and "against time and GPU-hours" not in figure
    assert "GPU-hours (trainer" not in figure
    for _, trace in runs:
        trace.events = trace.events[~trace.events["key"].astype(str).str.startswith("quality.")]
    write_report(runs, page)
    assert "No run logged a training reward (quality.reward_mean)." in _figure(page.read_text(), "learning")


def test_runs_are_compared_at_matched_quality_in_the_page_and_the_summary(tmp_path: Path) -> None:
    runs = _ingested(tmp_path, ("v0", "one_step_off"), GPUS)
    v0, one_step_off = (record.metrics["time_to_target_s"].value for record, _ in runs)
    sentence = (f"one_step_off) reaches reward>=0.5 {v0 / one_step_off:.2f}× sooner than ingest-verl-0.9.1-v0 "
                f"(verl v0): {one_step_off:.4g} s against {v0:.4g} s")  # fmt: skip
    assert f"{v0 / one_step_off:.2f}" == "6.92"  # 152.183 s (verl's timing_s/step, steps 1-3) against 22.001 s
    page = tmp_path / "report.html"
    write_report(runs, page)
    assert html.escape(sentence, quote=False) in _figure(page.read_text(), "learning")
    summary = markdown_comparison([record for record, _ in runs])
    assert "### At matched quality" in summary and sentence in summary


def test_a_target_no_run_reached_is_said_per_group_not_drawn_as_a_time(tmp_path: Path) -> None:
    runs = _ingested(tmp_path / "never", ("v0", "one_step_off"), GPUS, target="reward>=0.9")
    summary = markdown_comparison([record for record, _ in runs])
    assert "- ingest-verl-0.9.1-v0 (verl v0): reward>=0.9 not reached in the run (1 run(s))" in summary
    assert "sooner" not in summary
