"""The Sandboxes section and the Markdown per-level table on a real `benchbed sandbox-bench` run (local backend).

Needs bubblewrap (Debian package `bubblewrap`); skipped without it unless CI is set, where it is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.metrics import compute_metrics, series
from benchbed.record import RunRecord
from benchbed.report import render, write_report
from benchbed.store import read_record
from benchbed.trace import Trace, read_trace

LEVELS = (1, 4)
PER_LEVEL = 4


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, Trace, Path]:
    """A tiny sweep (levels 1 and 4, four sandboxes each) stored by the CLI, read back like `benchbed report`."""
    if shutil.which("bwrap") is None:
        message = "bubblewrap is not installed (apt-get install -y bubblewrap)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the sandbox-bench report test")
        pytest.skip(message)
    store = tmp_path_factory.mktemp("store")
    argv = [sys.executable, "-m", "benchbed", "sandbox-bench", "--backend", "local", "--concurrency",
            ",".join(map(str, LEVELS)), "--per-level", str(PER_LEVEL), "--store", str(store), "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    (run_dir,) = {p.parent for p in store.rglob("record.json")}
    return read_record(run_dir), read_trace(run_dir), run_dir


def test_sandbox_section_draws_every_panel_and_the_per_level_table(
    bench_run: tuple[RunRecord, Trace, Path], tmp_path: Path
) -> None:
    record, trace, _ = bench_run
    markdown = write_report([(record, trace)], tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    section = re.search(r'<section class="plot" id="run-1-sandboxes".*?</section>', html, re.DOTALL).group(0)
    assert section.count("<svg") == 4 and "Not available" not in section
    assert f"{len(LEVELS) * PER_LEVEL} sandbox start attempts at concurrency levels 1, 4." in section
    rows = re.findall(r"<tr>(<td.*?)</tr>", section)
    assert [re.findall(r'<td class="num">(.*?)</td>', row)[:3] for row in rows] == [
        [str(level), str(PER_LEVEL), "0"] for level in LEVELS
    ]  # level, sandboxes, init failures
    for level in LEVELS:
        numbers = r" \| [\d.]+" * 5  # start p50, p99, queue p99, starts/s, bare fork/exec ÷ starts
        assert re.search(rf"^\| {level} \| {PER_LEVEL} \| 0 \| 0 \| —{numbers} \|$", markdown, re.MULTILINE), markdown
    assert "| level | sandboxes | init failures | failure rate | reasons | start p50 ms |" in markdown


def test_series_match_the_sweep_and_the_record(bench_run: tuple[RunRecord, Trace, Path]) -> None:
    record, trace, _ = bench_run
    measured = trace.meta.extra["sandbox_bench"]["measured"]
    levels = series.sandbox_levels(trace)
    assert levels["level"].tolist() == [row["level"] for row in measured] == list(LEVELS)
    assert levels["attempts"].tolist() == [row["n"] for row in measured] == [PER_LEVEL] * len(LEVELS)
    assert levels["failures"].tolist() == [0, 0]
    for ours, theirs in zip(levels.to_dict("records"), measured, strict=True):
        assert ours["completions_per_s"] == pytest.approx(theirs["n"] / theirs["wall_s"])
        assert ours["start_ratio_vs_bare"] == pytest.approx(theirs["n"] / theirs["bare_s"] / ours["starts_per_s"])
    starts = trace.of("sandbox.start")
    ok = (starts["t1"] - starts["t0"])[starts["status"] == "ok"]
    assert record.metrics["sandbox_start_p50_s"].value == pytest.approx(float(ok.median()))
    cdf = series.sandbox_start_cdf(trace)
    assert cdf.groupby("level")["fraction"].max().tolist() == [1.0, 1.0]
    assert len(cdf) == len(LEVELS) * PER_LEVEL
    assert record.metrics["sandbox_init_failure_rate"].value == 0.0


def test_a_framework_run_with_sandbox_boots_gets_the_section_without_levels(
    make_record: Callable[..., RunRecord],
) -> None:
    """prime-rl episodes' sandbox boots (no concurrency levels, no admission queue) in one group."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "prime_rl" / "head-559b447-sandbox-failures"
    trace = get_adapter("prime_rl").parse(fixture)
    starts = trace.of("sandbox.start")
    metrics = compute_metrics(trace)
    levels = series.sandbox_levels(trace)
    assert levels["level"].tolist() == [series.NO_LEVEL] and levels["attempts"].tolist() == [len(starts)]
    assert levels["failure_rate"].iloc[0] == pytest.approx(metrics["sandbox_init_failure_rate"].value)
    assert levels["failures"].iloc[0] > 0
    html = render.render_html([(make_record(trace, metrics, name="prime-rl"), trace)])
    section = re.search(r'<section class="plot" id="run-1-sandboxes".*?</section>', html, re.DOTALL).group(0)
    failed = int((starts["status"] != "ok").sum())
    assert f"{len(starts)} sandbox start attempts in one group (the trace has no concurrency levels)." in section
    assert f"{failed} of {len(starts)} attempts failed (" in section
    assert section.count("<svg") == 3 and "Not available in this trace (no sandbox.queue spans" in section
