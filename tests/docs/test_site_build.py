"""The strict build refuses a site that no longer matches the code: a registered adapter without its page, a broken
link, a marker the generator does not know. Each case builds a copy of the site with one thing broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _build(tmp_path: Path, breakage: str, page: str, text: str = "") -> subprocess.CompletedProcess[str]:
    """Copy mkdocs.yml, the README and docs/ to tmp_path, break the copy, build it strictly from the repository root
    (snippets are read relative to it)."""
    for name in ("mkdocs.yml", "README.md"):  # the README is the site's front page
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "docs" / page
    if breakage == "remove":
        target.unlink()
    else:
        target.write_text(target.read_text() + text)
    mkdocs = Path(sys.executable).with_name("mkdocs")
    return subprocess.run(
        [str(mkdocs), "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_registered_adapter_without_a_page_fails_the_build(tmp_path: Path) -> None:
    result = _build(tmp_path, "remove", "frameworks/verl.md")
    assert result.returncode != 0
    assert "adapter 'verl' has no page" in result.stderr


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    result = _build(tmp_path, "append", "guides/compare.md", "\nSee [the metrics](../reference/metric.md).\n")
    assert result.returncode != 0
    assert "contains a link '../reference/metric.md'" in result.stderr


def test_an_unknown_marker_fails_the_build(tmp_path: Path) -> None:
    result = _build(tmp_path, "append", "reference/cli.md", "\n<!-- benchbed:clii -->\n")
    assert result.returncode != 0
    assert "reference/cli.md: unknown marker `benchbed:clii`" in result.stderr
