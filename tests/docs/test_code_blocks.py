"""The documentation's commands work: every ```bash block runs (in order, one temporary directory per page, with the
repository's experiments/ and tests/ beside it and a fresh results/ store), and every `benchbed` command line in
any block, run or not, names subcommands, options and choices the CLI has. A guide therefore cannot describe a
command that no longer works."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from codeblocks import Block, blocks, check_command, command_lines, inline_commands, make_targets

from benchbed.cli.main import cli

pytestmark = pytest.mark.slow  # real processes and schedulers: left out by make test-fast

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "gen" not in p.relative_to(DOCS).parts)
EXTRAS_IN_TEXT = re.compile(r"benchbed\[([a-z0-9_,-]+)\]")


def _page_id(page: Path) -> str:
    return str(page.relative_to(DOCS))


def _runnable_pages() -> list[Path]:
    return [p for p in PAGES if any(b.runs for b in blocks(p))]


def test_the_block_reader_sees_runnable_and_marked_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```bash\nbenchbed ls\n```\n\n<!-- not-run: needs a cluster -->\n```bash\n"
        "benchbed run x.toml --launcher slurm \\\n  --store /shared\n```\n\n```toml\nname = 'x'\n```\n"
        "\n<!-- expect-exit: 3 -->\n```bash\nbenchbed compare a --vs b --fail-on regression\n```\n"
    )
    found = list(blocks(page))
    assert [(b.line, b.lang, b.runs, b.not_run, b.exit_status) for b in found] == [
        (3, "bash", True, "", 0),
        (8, "bash", False, "needs a cluster", 0),
        (13, "toml", False, "", 0),
        (18, "bash", True, "", 3),
    ]
    assert list(command_lines(found[1])) == ["benchbed run x.toml --launcher slurm --store /shared"]


def test_the_command_check_names_what_is_wrong() -> None:
    assert check_command(cli, "benchbed run x.toml --launcher slurm --store /shared --dry-run") == ""
    assert check_command(cli, "benchbed nightly s.toml --fail-on regression --junit x.xml") == ""
    assert check_command(cli, "benchbed sandbox run --timeout 10 -- python3 -c 'print(1)' --anything") == ""
    assert check_command(cli, "benchbed runn x.toml") == "`benchbed` has no subcommand 'runn'"
    assert check_command(cli, "benchbed run x.toml --lancher slurm") == "`benchbed run` has no option --lancher"
    assert check_command(cli, "benchbed export RUN --format=svg") == (
        "`benchbed export` option --format: 'svg' is not one of ['perfetto', 'csv', 'parquet']"
    )
    assert check_command(cli, "benchbed sandbox exec") == "`benchbed sandbox` has no subcommand 'exec'"
    assert check_command(cli, "benchbed export RUN --format FORMAT") == ""  # a placeholder the reader fills in


def test_every_benchbed_command_in_the_docs_exists() -> None:
    problems, seen = [], 0
    for page in PAGES:
        for block in blocks(page):
            for line in command_lines(block):
                seen += 1
                problem = check_command(cli, line)
                if problem:
                    problems.append(f"{block.where}: {line}: {problem}")
        for line in inline_commands(page):
            seen += 1
            problem = check_command(cli, line)
            if problem:
                problems.append(f"{page}: `{line}`: {problem}")
    assert not problems, "\n".join(problems)
    assert seen > 60  # the guides are made of commands; a reader that found none is broken


def test_make_targets_and_extras_named_in_the_docs_exist() -> None:
    targets = make_targets(ROOT / "Makefile")
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = set(re.findall(r"^([a-z0-9_-]+) = \[", pyproject.split("[project.optional-dependencies]")[1], re.M))
    problems = []
    for page in PAGES:
        for block in blocks(page):
            for match in re.finditer(r"(?:^|[\s;&(])make ([a-z][\w-]*)", block.text):
                if match[1] not in targets:
                    problems.append(f"{block.where}: make {match[1]}: no such Makefile target")
        for match in EXTRAS_IN_TEXT.finditer(page.read_text()):
            problems += [
                f"{page}: extra {e!r} is not in pyproject.toml" for e in match[1].split(",") if e not in extras
            ]
    assert not problems, "\n".join(problems)
    assert {"demo", "test", "docs", "docs-serve"} <= targets


def test_every_guide_has_commands_that_run() -> None:
    guides = [p for p in PAGES if p.parent.name == "guides"]
    assert len(guides) == 5
    assert all(any(b.runs for b in blocks(p)) for p in guides), [_page_id(p) for p in guides]


def _run_block(block: Block, cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == block.exit_status, (
        f"{block.where}: the block exited {result.returncode}, not {block.exit_status}\n--- block\n{block.text}"
        f"--- stdout (end)\n"
        f"{result.stdout[-3000:]}\n--- stderr (end)\n{result.stderr[-3000:]}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_pages(), ids=_page_id)
def test_the_page_commands_run(page: Path, tmp_path: Path) -> None:
    """Each ```bash block of the page, in order, as a reader would type them in a checkout (`experiments/` and
    `tests/` are the repository's); what they write goes to a temporary directory."""
    for name in ("experiments", "tests"):
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["BENCHBED_MACHINE"] = "docs"
    ran = 0
    for block in blocks(page):
        if block.runs:
            _run_block(block, tmp_path, env)
            ran += 1
    assert ran >= 1
