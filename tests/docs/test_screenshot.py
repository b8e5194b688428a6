"""The annotated screenshot of docs/get-started/report.md can be made again from today's report: every outlined part
is still in the quickstart's report (docs/gen/screenshot.py), so the picture cannot silently describe a report that
changed. Skipped only when Chromium is not installed and CI is not set; in CI a missing browser is a failure."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from screenshot import PARTS, part_screenshot, quickstart_report, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_every_annotated_part_is_in_the_quickstart_report(tmp_path: Path) -> None:
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are needed in CI (apt-get install -y chromium chromium-driver)")
        pytest.skip("chromium is not installed (apt-get install -y chromium chromium-driver)")
    from PIL import Image

    out = tmp_path / "report.png"
    report = quickstart_report(tmp_path / "store")
    assert screenshot(report, out) == []
    with Image.open(out) as image:
        assert image.width == 1280 and image.height > 2000
    # one part alone, as the README's comparison picture is made: the breakdown figure, narrower than the page
    part = tmp_path / "breakdown.png"
    part_screenshot(report, 'section.plot[data-section="breakdown"]', part)
    with Image.open(part) as image:
        assert 600 < image.width < 1280 and 150 < image.height < 1000
    with pytest.raises(SystemExit, match="no part '#compare-breakdown' in the report"):
        part_screenshot(report, "#compare-breakdown", tmp_path / "absent.png")  # a one-run report compares nothing
    page = (ROOT / "docs" / "get-started" / "report.md").read_text()
    numbered = [int(n) for n in re.findall(r"^(\d+)\. \*\*", page, re.M)]
    assert numbered == [n for n, _, _ in PARTS]
