"""What the reference generators share: the error they raise and Markdown table cells."""

from __future__ import annotations

import re

_CODE_SPAN = re.compile(r"(`[^`]*`)")


class DocsError(Exception):
    """The documentation does not match the code (an undocumented option, a page missing); fails the build."""


def cell(text: object) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped and `<` written as an entity outside code
    spans (inside one, a pipe does not split the cell and a backslash would show)."""
    parts = _CODE_SPAN.split(" ".join(str(text).split()))
    return "".join(part if i % 2 else part.replace("|", "\\|").replace("<", "&lt;") for i, part in enumerate(parts))


def code(text: object) -> str:
    """Text as a code span inside a table cell."""
    return f"`{' '.join(str(text).split())}`"
