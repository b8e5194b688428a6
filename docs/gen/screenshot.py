"""Make docs/img/report-annotated.png: the quickstart's report in headless Chromium, with numbered outlines on
the parts that docs/get-started/report.md explains; or, with --report and --part, one part of a report already
written (the README's comparison pictures).

    .venv/bin/python docs/gen/screenshot.py [--out docs/img/report-annotated.png]
    .venv/bin/python docs/gen/screenshot.py --report matched.html --part '#compare-breakdown' --out PNG

It runs `benchbed demo` into a temporary store (the report a new user sees), opens the report, draws the outlines
in the page and takes the screenshot. Each annotated part is found by a CSS selector of the report's template;
a part that is missing is an error, so a changed report cannot leave the picture silently wrong
(tests/docs/test_screenshot.py runs this)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "img" / "report-annotated.png"
WIDTH = 1280
# (number, selector of the part, what the page calls it): the order of docs/get-started/report.md
PARTS = (
    (1, "#diagnosis-1", "the diagnosis"),
    (2, "#runs", "the runs and their status"),
    (3, "#metrics", "the metric table, by family"),
    (4, 'tr[data-metric="trainer_idle_ratio"]', "trainer idle"),
    (5, "div.status", "the run's status line"),
    (6, 'section.plot[data-section="breakdown"]', "the trainer step breakdown"),
    (7, 'section.plot[data-section="staleness"]', "staleness"),
    (8, 'section.plot[data-section="utilisation"]', "generator utilisation"),
    (9, 'section.plot[data-section="zero_adv"]', "zero-advantage groups"),
    (10, 'section.plot[data-section="timeline"]', "the timeline"),
)
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
)  # fmt: skip
# Outline each part and put its number in a badge at its top-left corner; returns the selectors not found.
ANNOTATE = """
const parts = arguments[0], missing = [];
for (const [n, selector] of parts) {
  const el = document.querySelector(selector);
  if (!el) { missing.push(selector); continue; }
  const r = el.getBoundingClientRect(), x = r.left + window.scrollX, y = r.top + window.scrollY;
  const box = document.createElement('div');
  box.style.cssText = `position:absolute;left:${x - 4}px;top:${y - 4}px;width:${r.width + 8}px;` +
    `height:${r.height + 8}px;border:3px solid #d62728;border-radius:6px;pointer-events:none;z-index:1000`;
  const badge = document.createElement('div');
  badge.textContent = n;
  badge.style.cssText = `position:absolute;left:${x - 18}px;top:${y - 18}px;width:28px;height:28px;` +
    `border-radius:14px;background:#d62728;color:#fff;font:bold 16px/28px sans-serif;text-align:center;z-index:1001`;
  document.body.append(box, badge);
}
return missing;
"""


def quickstart_report(store: Path) -> Path:
    """Run `benchbed demo` into `store` and return the report it wrote."""
    benchbed = Path(sys.executable).with_name("benchbed")
    subprocess.run([str(benchbed), "demo", "--store", str(store)], check=True, capture_output=True, timeout=600)
    reports = sorted(store.rglob("report.html"))
    if not reports:
        raise SystemExit(f"benchbed demo wrote no report under {store}")
    return reports[-1]


@contextlib.contextmanager
def _browser(report: Path) -> Iterator[Any]:
    """Headless Chromium (selenium) with `report` open in a window WIDTH pixels wide."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver_path = shutil.which("chromedriver")
    if not browser or not driver_path:
        raise SystemExit("needs chromium and chromedriver (apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="benchbed-docs-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WIDTH},1000")
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        driver.get(report.resolve().as_uri())
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(report: Path, out: Path, parts: tuple[tuple[int, str, str], ...] = PARTS) -> list[str]:
    """Annotate `report` in headless Chromium and save the page as a PNG; returns the selectors not found."""
    with _browser(report) as driver:
        missing = driver.execute_script(ANNOTATE, [[n, selector] for n, selector, _ in parts])
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WIDTH, height)
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
        return missing


def part_screenshot(report: Path, selector: str, out: Path) -> None:
    """Save one part of `report` (the element `selector` finds) as a PNG; a part the report lacks is an error."""
    from selenium.common.exceptions import NoSuchElementException
    from selenium.webdriver.common.by import By

    with _browser(report) as driver:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WIDTH, height)
        try:
            element = driver.find_element(By.CSS_SELECTOR, selector)
        except NoSuchElementException:
            raise SystemExit(f"{report}: no part {selector!r} in the report") from None
        out.parent.mkdir(parents=True, exist_ok=True)
        element.screenshot(str(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"PNG to write (default: {OUT.relative_to(ROOT)})")
    parser.add_argument("--report", type=Path, help="a report `benchbed report` wrote (with --part)")
    parser.add_argument("--part", help="CSS selector of the report's part to save, e.g. '#compare-breakdown'")
    args = parser.parse_args()
    if (args.report is None) != (args.part is None):
        parser.error("--report and --part go together")
    if args.report is not None:
        part_screenshot(args.report, args.part, args.out)
        print(args.out)
        return
    with tempfile.TemporaryDirectory(prefix="benchbed-docs-") as tmp:
        missing = screenshot(quickstart_report(Path(tmp)), args.out)
    if missing:
        raise SystemExit(f"the report has no {', '.join(missing)}: update PARTS and docs/get-started/report.md")
    print(args.out)


if __name__ == "__main__":
    main()
