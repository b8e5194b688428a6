"""The README is the front page: its Quickstart has exactly the two commands, and every link in it resolves."""

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
