"""Shell text printed for a person to read or paste (`--dry-run`): every value quoted with shlex, file contents
in quoted here-documents, notes as comments line by line, so pasting it runs the command shown and nothing that
a spec value smuggles in (`$(...)`, backquotes, a line break)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_variable_name(name: str) -> bool:
    """True for a name `export` accepts (letters, digits, '_', not starting with a digit)."""
    return bool(_NAME.match(name))


def comment(text: str) -> str:
    """`text` as shell comments: every line, including those a value's line breaks start, begins with '# '."""
    return "\n".join(f"# {line}" for line in (text.splitlines() or [""]))


def exports(env: Mapping[str, str]) -> list[str]:
    """`export NAME='value'` lines; a name the shell cannot export is shown as a comment instead."""
    return [
        f"export {name}={shlex.quote(value)}"
        if is_variable_name(name)
        else comment(f"not a shell variable name: {name!r}")
        for name, value in env.items()
    ]


def heredoc(path: Path, text: str) -> str:
    """A command that writes `text` to `path` verbatim (a quoted here-document: nothing in it is expanded)."""
    end = "BENCHBED_EOF"
    while end in text.splitlines():
        end += "_"
    body = text if text.endswith("\n") else text + "\n"
    return f"mkdir -p {shlex.quote(str(path.parent))} && cat > {shlex.quote(str(path))} <<'{end}'\n{body}{end}"
