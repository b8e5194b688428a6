"""The code blocks of the documentation pages, and the `benchbed` command lines in them, for the tests that run
them (doctest-style) and check them against the CLI.

A ```bash block runs as a test, in order with the page's other bash blocks, in one temporary directory per page.
A block that cannot run on a CPU (a GPU cluster, a Slurm allocation, a long nightly) is preceded by
`<!-- not-run: why -->`, and one whose documented exit status is not 0 by `<!-- expect-exit: N -->` (its last
command's status); a not-run block's `benchbed` command lines, like those in cron and YAML blocks, are still checked
against the click commands (every subcommand and option must exist, a choice must be one of its values)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)(?P<rest>.*)$")
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<why>.+?)\s*-->")
EXPECT_EXIT = re.compile(r"<!--\s*expect-exit:\s*(?P<status>\d+)\s*-->")
RUNNABLE = ("bash",)
CHECKED = ("bash", "sh", "shell", "console", "cron", "yaml", "text")
# `benchbed SUBCOMMAND ...` as a command word: at a line start, after whitespace, a `/` (.venv/bin/benchbed),
# `$ ` or `(`; in text blocks only after `$ ` (a shell prompt), since text blocks also show output.
COMMAND = re.compile(r"(?:^|(?<=[\s/(]))benchbed[ \t]+(?=[a-z])")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*|<[^>]*>|…)$")  # NAME, <name>, …: a value the reader chooses
INLINE = re.compile(r"`benchbed ([a-z][^`]*)`")
OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "(", ")", "$("}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text, and why it does not run (if it does not)."""

    page: Path
    line: int
    lang: str
    text: str
    not_run: str = ""
    exit_status: int = 0

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE and not self.not_run

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    """Every fenced block of a Markdown page, in order, with the `not-run` reason written just before it."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent = match["fence"], len(match["indent"])
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        why, status = NOT_RUN.search(before), EXPECT_EXIT.search(before)
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j].lstrip())
            j += 1
        yield Block(
            page,
            i + 1,
            match["lang"],
            "\n".join(body) + "\n",
            why["why"] if why else "",
            int(status["status"]) if status else 0,
        )
        i = j + 1


def command_lines(block: Block) -> Iterator[str]:
    """The `benchbed …` invocations in a block (continuation lines joined), each from `benchbed` to the first
    shell operator; in text blocks only those after a `$ ` prompt."""
    if block.lang not in CHECKED:
        return
    for line in block.text.replace("\\\n", " ").splitlines():
        if block.lang == "text" and not line.lstrip().startswith("$ "):
            continue
        for match in COMMAND.finditer(line):
            yield "benchbed " + _until_operator(line[match.end() :])


def inline_commands(page: Path) -> Iterator[str]:
    """The `benchbed …` commands written as inline code in a page's prose (outside fenced blocks)."""
    inside, prose = "", []
    for line in page.read_text().splitlines():
        fence = FENCE.match(line)
        if fence and (not inside or fence["fence"].startswith(inside)):
            inside = "" if inside else fence["fence"]
        elif not inside:
            prose.append(line)
    for match in INLINE.finditer("\n".join(prose)):
        yield "benchbed " + _until_operator(match[1].replace("\n", " "))


def _until_operator(text: str) -> str:
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    for word in lexer:
        if word in OPERATORS or set(word) <= set("|&;<>()"):
            break
        words.append(shlex.quote(word))
    return " ".join(words)


def check_command(group: click.Group, line: str) -> str:
    """'' when `line` (`benchbed …`) names commands and options the CLI has, else what is wrong."""
    words = shlex.split(line)[1:]
    command: click.Command = group
    path = "benchbed"
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        name = words.pop(0)
        sub = command.get_command(click.Context(command, info_name=path), name)  # a lazy group imports it here
        if sub is None:
            return f"`{path}` has no subcommand {name!r}"
        command, path = sub, f"{path} {name}"
    options = {o: p for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}
    options.update({"--help": None, "-h": None})
    while words:
        word = words.pop(0)
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            continue
        name, _, value = word.partition("=")
        if name not in options:
            return f"`{path}` has no option {name}"
        param = options[name]
        if param is None or param.is_flag or param.count:
            continue
        if not value:
            if not words:
                return f"`{path}` option {name} needs a value"
            value = words.pop(0)
        if isinstance(param.type, click.Choice) and value not in param.type.choices and not PLACEHOLDER.match(value):
            return f"`{path}` option {name}: {value!r} is not one of {list(param.type.choices)}"
    return ""


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile defines."""
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", makefile.read_text(), re.M))
