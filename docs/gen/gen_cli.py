"""The command-line reference, rendered from the click commands themselves: usage, help text and every option.

A command without a docstring or an option without help text is an error, so the reference cannot fall behind
the CLI: adding an option without saying what it does fails the docs build."""

from __future__ import annotations

from collections.abc import Iterator

import click
from gen_common import DocsError, cell, code


def commands(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command]]:
    """(full name, command) for every command under `group`, depth first, in the order the group lists them."""
    ctx = click.Context(group, info_name=prefix)
    for name in group.list_commands(ctx):  # a lazy group imports each command here
        command = group.get_command(ctx, name)
        path = f"{prefix} {name}"
        if command is None or command.hidden:
            continue
        yield path, command
        if isinstance(command, click.Group):
            yield from commands(command, path)


def undocumented(group: click.Group, prefix: str) -> list[str]:
    """Commands without a docstring and options without help text, one phrase each."""
    problems = []
    for path, command in commands(group, prefix):
        if not (command.help or "").strip():
            problems.append(f"`{path}` has no help text (its docstring)")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip():
                problems.append(f"`{path}` option {'/'.join(param.opts)} has no help text")
    return problems


def anchor(path: str) -> str:
    """The heading anchor of a command's section (mkdocs' toc slug of its name)."""
    return path.replace(" ", "-")


def _usage(command: click.Command, path: str) -> str:
    ctx = click.Context(command, info_name=path)
    return f"{path} {' '.join(command.collect_usage_pieces(ctx))}".strip()


def _option_row(param: click.Option, ctx: click.Context) -> str:
    record = param.get_help_record(ctx)
    if record is None:
        return ""
    names, help_text = record
    return f"| {code(names)} | {cell(help_text)} |"


def command_section(path: str, command: click.Command, level: int) -> str:
    """One command: heading (none at level 0), usage, help text, then its arguments and options as a table."""
    ctx = click.Context(command, info_name=path)
    heading = [f"{'#' * level} {path}", ""] if level else []
    lines = [*heading, "```text", _usage(command, path), "```", ""]
    lines += [inspect_help(command), ""]
    if isinstance(command, click.Group):
        depth = path.count(" ") + 1
        subs = [f"[`{sub}`](#{anchor(sub)})" for sub, _ in commands(command, path) if sub.count(" ") == depth]
        lines += [f"Subcommands: {', '.join(subs)}.", ""]
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        shown = ", ".join(f"`{p.make_metavar(ctx)}`" for p in arguments)
        lines += [f"Arguments: {shown}.", ""]
    rows = [_option_row(p, ctx) for p in command.get_params(ctx) if isinstance(p, click.Option)]
    rows = [row for row in rows if row]
    if rows:
        lines += ["| option | what it does |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def inspect_help(command: click.Command) -> str:
    """The command's help text as Markdown paragraphs (click's \\b no-rewrap markers dropped)."""
    text = (command.help or "").replace("\b\n", "")
    return "\n".join(line.strip() for line in text.strip().splitlines())


def cli_markdown(group: click.Group, name: str = "benchbed") -> str:
    """The whole reference: the top-level usage, then a section per command (`benchbed run` a level-2 heading,
    `benchbed sandbox run` level 3). DocsError lists what is undocumented."""
    problems = undocumented(group, name)
    if problems:
        raise DocsError("the CLI reference is generated from the click commands: " + "; ".join(problems))
    sections = [command_section(name, group, 0)]
    sections += [command_section(path, command, 1 + path.count(" ")) for path, command in commands(group, name)]
    return "\n".join(sections)
