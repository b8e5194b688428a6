"""Every provenance in the repository is public: no tracked file points at notes outside the project (a clone has
none of them), and the docs state what is true now rather than how figures changed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Spelled in parts so that this file does not match itself.
OUTSIDE = ("../" + "shared", "shared/" + "reference", "anchors" + ".md", "field-2026" + ".md", "DESIGN" + ".md")
DESIGN_SECTION = re.compile("DESIGN" + r" §\d")
HISTORY = re.compile(r"\bBefore 20\d\d-\d\d-\d\d\b|" + "existing" + r" installs|\bpreviously\b", re.IGNORECASE)


def _tracked() -> list[Path]:
    """The files git tracks in this checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout: {exc}")
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None  # binary (images, parquet fixtures) or deleted in the working tree


def test_no_tracked_file_cites_notes_outside_the_project() -> None:
    hits = []
    for path in _tracked():
        text = _text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(needle in line for needle in OUTSIDE) or DESIGN_SECTION.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == []


def test_the_docs_state_what_is_true_now() -> None:
    pages = [ROOT / "README.md", ROOT / "pyproject.toml", *sorted((ROOT / "docs").rglob("*.md"))]
    hits = []
    for path in pages:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == []


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("see ../" + "shared/notes.md", True),
        ("(" + "anchors" + ".md §1)", True),
        ("trace keys (" + "DESIGN" + " §3)", True),
        ("--store /shared/benchbed-results", False),  # a cluster path, not the notes
        ("trace keys (docs/reference/trace.md)", False),
    ],
)
def test_the_outside_reference_check(line: str, caught: bool) -> None:
    assert (any(needle in line for needle in OUTSIDE) or DESIGN_SECTION.search(line) is not None) == caught
