"""The README is the front page: under 150 lines, its Quickstart has exactly the two commands, every link in it
resolves, each job links to its guide, and no message or docstring points at a README section any more."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_quickstart_has_exactly_two_commands_that_exist_in_the_makefile() -> None:
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = quickstart.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_every_relative_link_and_image_of_the_readme_exists() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if "://" not in t and not t.startswith("mailto:")]
    assert "docs/comparison.png" in local
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_the_readme_is_a_front_page_under_150_lines_that_links_each_job_to_its_guide() -> None:
    assert len(README.splitlines()) < 150
    for guide in ("docs/guides/reproduce.md", "docs/guides/nightly.md", "docs/guides/compare.md"):
        assert f"]({guide})" in README, guide


def test_pointers_from_the_code_into_the_docs_exist() -> None:
    """Messages and docstrings name documentation pages by path (docs/reference/metrics.md, ...); each must exist,
    and none may send a reader to a README section: the README is only the front page now."""
    problems = []
    for folder in ("benchbed", "adapters", "tools", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            problems += [
                f"{path}: {page}" for page in re.findall(r"\bdocs/[\w/.-]+\.md", text) if not (ROOT / page).exists()
            ]
            if folder != "tests":  # a framework's own README (verl's, AReaL's) is a source, not ours
                ours = re.findall(r"\bthe README\b|\(README\b", text)
                problems += [f"{path}: points at a README section" for _ in ours]
    assert problems == []
