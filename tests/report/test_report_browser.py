"""End to end: the report opens in headless Chromium without console errors or network fetches.

Skipped only when Chromium is not installed and CI is not set; in CI a missing browser is a failure.
Debian packages: chromium, chromium-driver.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchbed.record import RunRecord
from benchbed.report import write_report
from benchbed.trace import Trace

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
    "--window-size=1280,2000",
)  # fmt: skip


def _browser_paths() -> tuple[str, str]:
    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    missing = "chromium" if not browser else "chromedriver"
    message = f"{missing} is not installed (apt-get install -y chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI must run the browser test")
    pytest.skip(message)


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    browser, chromedriver = _browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="benchbed-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        yield chrome
    finally:
        chrome.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_report_loads_without_errors_and_shows_the_metric_table(
    driver: object, sim_pair: tuple[RunRecord, Trace], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    record, trace = sim_pair
    page = tmp_path / "report.html"
    write_report([(record, trace)], page)
    driver.get(page.as_uri())

    assert driver.title.startswith("benchbed report")
    table = driver.find_element(By.ID, "metrics")
    row = table.find_element(By.CSS_SELECTOR, 'tr[data-metric="trainer_idle_ratio"]')
    cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == ["trainer_idle_ratio", f"{record.metrics['trainer_idle_ratio'].value:.4g}", "ratio"]
    figures = driver.find_elements(By.CSS_SELECTOR, "section.plot figure svg")
    assert len(figures) == 5
    assert all(svg.size["width"] > 300 and svg.size["height"] > 100 for svg in figures)
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched == []

    errors = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    driver.execute_script("console.error('benchbed-probe')")  # the console channel really reports errors
    assert any("benchbed-probe" in entry["message"] for entry in driver.get_log("browser"))


def test_comparison_report_fits_1280_px_and_every_plot_is_labelled(
    driver: object, comparison_runs: list[tuple[RunRecord, Trace]], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    page = tmp_path / "compare.html"
    write_report(comparison_runs, page)
    driver.set_window_size(1280, 2000)
    driver.get(page.as_uri())
    width = driver.execute_script("return document.documentElement.clientWidth")
    assert driver.execute_script("return document.body.scrollWidth") <= width  # no horizontal overflow
    # the wide tables scroll inside their own box, with the metric names kept in view
    assert (
        driver.execute_script("return getComputedStyle(document.querySelector('#compare-metrics td')).position")
        == "sticky"
    )
    figures = driver.find_elements(By.CSS_SELECTOR, "section.compare-plot figure svg")
    drawn = {s.get_attribute("data-section") for s in driver.find_elements(By.CSS_SELECTOR, "section.compare-plot")}
    assert {"per_gpu", "breakdown", "generator", "staleness", "sandboxes", "step_times", "waste",
            "learning", "matrix-sim.concurrency"} <= drawn  # fmt: skip
    assert len(figures) >= 8
    for svg in figures:
        assert svg.size["width"] <= width
        texts = driver.execute_script(
            """const svg = arguments[0], text = sel => [...svg.querySelectorAll(sel)].map(e => e.textContent.trim());
            return {title: text('[id^="title-"]'), x: text('[id^="xlabel-"]'), y: text('[id^="ylabel-"]'),
                    legend: text('[id^="legend-"]')};""",
            svg,
        )
        assert texts["title"] and all(texts["title"]), texts
        assert texts["x"] and all(texts["x"]) and texts["y"] and all(texts["y"]), texts
        assert texts["legend"] and all(texts["legend"]), texts
        assert any("(" in label for label in texts["x"] + texts["y"]), texts  # a unit on at least one axis
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched == []
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
    height = driver.execute_script("return document.getElementById('metrics-heading').offsetTop")
    driver.set_window_size(1280, min(int(height), 9000))
    assert driver.save_screenshot(str(tmp_path / "comparison.png"))


def test_one_run_per_framework_fits_1280_px_with_their_own_figures_side_by_side(
    driver: object, framework_runs: list[tuple[RunRecord, Trace]], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    page = tmp_path / "frameworks.html"
    write_report(framework_runs, page)
    driver.set_window_size(1280, 2000)
    driver.get(page.as_uri())
    width = driver.execute_script("return document.documentElement.clientWidth")
    assert driver.execute_script("return document.body.scrollWidth") <= width  # no horizontal overflow
    boxes = driver.execute_script("return [...document.querySelectorAll('.scroll')].map(e => e.clientWidth)")
    assert boxes and max(boxes) <= width  # wide tables scroll inside their own box
    adapters = [run.adapter.name for run, _ in framework_runs]
    table = driver.find_element(By.ID, "framework-figures")
    header = [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "tr:first-child th")]
    assert len(header) == 2 + len(adapters), header
    notes = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#framework-definitions li")]
    idle = next(n for n in notes if n.startswith("framework_trainer_idle_ratio is not the same quantity"))
    assert "verl: fully_async/trainer/idle_ratio" in idle and "slime: perf/wait_time_ratio" in idle
    staleness = next(n for n in notes if n.startswith("framework_staleness_mean is not the same quantity"))
    assert all(f"{a}: " in staleness for a in ("prime_rl", "nemo_rl", "skyrl")), staleness
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
