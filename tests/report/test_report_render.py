"""write_report: the HTML page (tables, sections, degraded sections, no network references) and the Markdown."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.record import ErrorInfo, MetricValue, RunRecord
from benchbed.report import render, sections, write_report
from benchbed.trace import Trace

SECTION_KEYS = ("breakdown", "staleness", "utilisation", "zero_adv", "timeline")  # drawn for a simulated run
ALL_SECTIONS = (*SECTION_KEYS, "sandboxes")
# Anything a browser would fetch: src/href/url()/@import pointing at a network location, or external script/css.
RESOURCE_REF = re.compile(
    r"""\b(?:src|href|action|poster)\s*=\s*["']?\s*(?:https?:)?//"""  # also matches xlink:href
    r"""|url\(\s*["']?\s*(?:https?:)?//|@import""",
    re.IGNORECASE,
)


def section_html(html: str, key: str) -> str:
    match = re.search(rf'<section class="plot" id="run-1-{key}".*?</section>', html, re.DOTALL)
    assert match, f"section {key} missing"
    return match.group(0)


def ratio(value: float, source: str = "span") -> MetricValue:
    return MetricValue(value=value, unit="ratio", higher_is_better=False, source=source)


def test_single_run_report_has_metric_table_all_sections_and_markdown(
    sim_pair: tuple[RunRecord, Trace], tmp_path: Path
) -> None:
    record, trace = sim_pair
    out = tmp_path / "sub" / "report.html"
    markdown = write_report([(record, trace)], out)
    html = out.read_text()
    idle = record.metrics["trainer_idle_ratio"].value
    row = re.search(r'<tr data-metric="trainer_idle_ratio">(.*?)</tr>', html, re.DOTALL)
    assert row and f"{idle:.4g}" in row.group(1) and "ratio" in row.group(1)
    assert '<table id="metrics"' in html
    for family in ("trainer", "generator / throughput", "staleness", "groups"):
        assert f">{family}</th>" in html
    for key in SECTION_KEYS:
        assert "<svg" in section_html(html, key), key
    sandboxes = section_html(html, "sandboxes")
    assert "Not available in this trace (no sandbox.start spans)." in sandboxes and "<svg" not in sandboxes
    assert html.count("Not available") == 1
    assert "Sandbox starts per concurrency level" not in markdown
    assert f"| trainer | trainer_idle_ratio | {idle:.4g} | ratio |" in markdown
    assert "status: succeeded" in markdown
    assert not list(tmp_path.glob("sub/.*")), "temporary file left behind"


def test_report_references_no_network_resources(sim_pair: tuple[RunRecord, Trace], tmp_path: Path) -> None:
    html = render.render_html([sim_pair])
    assert not RESOURCE_REF.search(html), RESOURCE_REF.search(html)
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert RESOURCE_REF.search('<img src="https://example.com/x.png">')  # the pattern does catch references


def test_agg_only_trace_degrades_sections_with_reasons(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord], tmp_path: Path
) -> None:
    rows = []
    for step in (1, 2, 3):
        rows += [("trainer.step", "agg", {"step": step, "value": 10.0}),
                 ("trainer.wait", "agg", {"step": step, "value": 4.0}),
                 ("trainer.compute", "agg", {"step": step, "value": 5.0}),
                 ("groups.finished", "agg", {"step": step, "value": 4}),
                 ("groups.zero_adv", "agg", {"step": step, "value": 1})]  # fmt: skip
    trace = build(rows, framework="verl")
    record = make_record(trace, {"trainer_idle_ratio": ratio(0.4, "agg")})
    html = render.render_html([(record, trace)])
    assert "<svg" in section_html(html, "breakdown") and "per-step agg rows" in section_html(html, "breakdown")
    assert "<svg" in section_html(html, "zero_adv")
    assert "Not available in this trace (no rollout rows)." in section_html(html, "staleness")
    assert "Not available in this trace (no rollout spans)." in section_html(html, "utilisation")
    assert "Not available in this trace (no trainer or rollout spans with timestamps)." in section_html(
        html, "timeline"
    )
    assert '<span class="tag">agg</span>' in html


def test_sandbox_only_trace_draws_only_the_sandbox_section(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord], tmp_path: Path
) -> None:
    trace = build([
        ("sandbox.start", "span", {"t0": 0.0, "t1": 2.0, "status": "ok", "actor": "sandbox/0"}),
        ("sandbox.start", "span", {"t0": 0.5, "t1": 9.0, "status": "rate_limited", "actor": "sandbox/1"}),
    ])  # fmt: skip
    metrics = {"sandbox_init_failure_rate": ratio(0.5), "sandbox_start_p50_s": MetricValue(value=2.0, unit="s")}
    markdown = write_report([(make_record(trace, metrics), trace)], tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    for key in SECTION_KEYS:
        assert "Not available in this trace" in section_html(html, key), key
    sandboxes = section_html(html, "sandboxes")
    assert "2 sandbox start attempts in one group (the trace has no concurrency levels)." in sandboxes
    assert sandboxes.count("<svg") == 3 and '<table class="levels">' not in sandboxes  # not a sandbox-bench run
    assert "1 of 2 attempts failed (rate_limited 1)." in sandboxes
    assert "Not available in this trace (no sandbox.queue spans" in sandboxes
    assert ">sandbox</th>" in html
    assert "| sandbox | sandbox_init_failure_rate | 0.5 | ratio |" in markdown


def test_failed_and_partial_runs_are_marked_with_error_warnings_and_redacted_log(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "sekrit-token-123")
    trace = build([("trainer.step", "agg", {"step": 1, "value": 3.0})], partial=True, warnings=["log.txt:7: bad"])
    error = ErrorInfo(message="trainer crashed", exit_code=3, log_tail="Traceback\nkey=sekrit-token-123")
    warnings = ["ran out of memory", "env had sekrit-token-123"]
    record = make_record(trace, {}, status="failed", error=error, warnings=warnings)
    markdown = write_report([(record, trace)], tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert '<div class="status problem">status: FAILED' in html
    assert "error (exit code 3): trainer crashed" in html
    assert "ran out of memory" in html and "log.txt:7: bad" in html
    assert "Traceback" in html and "sekrit-token-123" not in html
    assert "No metrics in this record." in html
    assert "status: FAILED" in markdown and "- warning: ran out of memory" in markdown
    assert "sekrit-token-123" not in markdown

    partial_ok = make_record(trace, {}, status="succeeded")
    html = render.render_html([(partial_ok, trace)])
    assert "the trace is marked partial" in html and "(partial trace)" in html


def test_several_runs_get_one_column_each_and_framework_values_beside_ours(
    sim_run: Callable[..., tuple[RunRecord, Trace]], tmp_path: Path
) -> None:
    first, second = sim_run("alpha", steps=4), sim_run("beta", steps=4, mode="sync")
    metrics = dict(second[0].metrics)
    metrics["framework_trainer_idle_ratio"] = ratio(0.123, "framework")
    second = (second[0].model_copy(update={"metrics": metrics}), second[1])
    markdown = write_report([first, second], tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    labels = [f"alpha ({first[0].run_id})", f"beta ({second[0].run_id})"]
    header = next(line for line in markdown.splitlines() if line.startswith("| family"))
    assert header == f"| family | metric | unit | {labels[0]} | {labels[1]} |"
    idle = [r.metrics["trainer_idle_ratio"].value for r in (first[0], second[0])]
    assert f"| trainer | trainer_idle_ratio | ratio | {idle[0]:.4g} | {idle[1]:.4g} (fw 0.123) |" in markdown
    assert all(f"<th>{label}</th>" in html for label in labels)
    assert '<span class="fw">framework: 0.123</span>' in html
    assert html.count('<section class="plot"') == 2 * len(ALL_SECTIONS)


def test_metric_absent_from_one_run_is_a_dash_and_unknown_metrics_go_to_other(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord]
) -> None:
    trace = build([("trainer.step", "agg", {"step": 1, "value": 3.0})])
    one = make_record(trace, {"trainer_idle_ratio": ratio(0.25), "custom_thing": MetricValue(value=7, unit="x")})
    two = make_record(trace, {"trainer_idle_ratio": ratio(0.5)})
    html = render.render_html([(one, trace), (two, trace)])
    row = re.search(r'<tr data-metric="custom_thing">(.*?)</tr>', html, re.DOTALL).group(1)
    assert re.findall(r'<td class="num">(.*?)</td>', row) == ["7", "—"]
    assert html.index(">trainer</th>") < html.index(">other</th>")


def test_a_section_that_fails_to_draw_says_so(
    sim_pair: tuple[RunRecord, Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> str:
        raise ValueError("bad data")

    monkeypatch.setattr(sections.plots, "staleness_histogram", broken)
    html = render.render_html([sim_pair])
    assert "Could not be drawn: ValueError: bad data" in section_html(html, "staleness")
    assert "<svg" in section_html(html, "timeline")


def test_no_runs_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        write_report([], tmp_path / "r.html")


def test_rollout_points_without_times_give_staleness_but_no_utilisation(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord]
) -> None:
    rows = [("trainer.step", "agg", {"step": s, "value": 5.0}) for s in (1, 2, 3)]
    rows += [
        ("rollout", "point", {"step": 3, "status": "ok", "v_start": 0, "v_train": 2}),
        ("rollout", "point", {"step": 3, "status": "ok", "v_start": 1, "v_train": 2}),
    ]
    trace = build(rows)
    html = render.render_html([(make_record(trace, {}), trace)])
    assert "<svg" in section_html(html, "staleness") and "of 2 trained samples" in section_html(html, "staleness")
    assert "Not available in this trace (rollouts have no start/end times)." in section_html(html, "utilisation")
    assert "Not available in this trace" in section_html(html, "breakdown")


def test_long_runs_are_drawn_over_step_buckets(
    build: Callable[..., Trace], make_record: Callable[..., RunRecord]
) -> None:
    rows = []
    for step in range(1, 1001):
        rows += [("trainer.step", "agg", {"step": step, "value": 10.0}),
                 ("trainer.wait", "agg", {"step": step, "value": 4.0}),
                 ("groups.finished", "agg", {"step": step, "value": 4}),
                 ("groups.zero_adv", "agg", {"step": step, "value": 1})]  # fmt: skip
    trace = build(rows)
    html = render.render_html([(make_record(trace, {}), trace)])
    for key in ("breakdown", "zero_adv"):
        assert "trainer step (mean per step over buckets of 3 steps)" in section_html(html, key), key


def test_timeline_keeps_the_first_48_of_64_busy_slots(sim_run: Callable[..., tuple[RunRecord, Trace]]) -> None:
    run = sim_run("drop", steps=4, staleness_policy="drop")  # no admission bound: all 64 slots busy at once
    timeline = section_html(render.render_html([run]), "timeline")
    assert "on 48 generator lane(s)" in timeline
    assert ">slot/0<" in timeline and ">slot/45<" in timeline and ">slot/48<" not in timeline


def test_staleness_under_count_admission_says_the_bound_is_on_starts_not_ages(sim_run) -> None:
    """Issue 26: with count admission staleness_max may pass max_staleness; the report says why where it shows it."""
    from benchbed.report.sections import COUNT_ADMISSION_NOTE, staleness_section

    counted, counted_trace = sim_run("counted", staleness_policy="count")
    dropped, dropped_trace = sim_run("dropped", staleness_policy="drop")
    assert counted_trace.meta.mode == "async/count" and dropped_trace.meta.mode == "async/drop"
    assert staleness_section(counted, counted_trace).caption.endswith(COUNT_ADMISSION_NOTE)
    assert COUNT_ADMISSION_NOTE not in staleness_section(dropped, dropped_trace).caption
