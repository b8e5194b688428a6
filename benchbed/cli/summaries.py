"""The one-line summary `benchbed --help` lists for a command named lazily (`module:attribute`), read from the
command's own source without importing its module: the `short_help` (or `help`) of its click decorator, else its
docstring, shortened to the column as click shortens a help text. None when the source does not say (the caller
imports the command instead)."""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect

import click


def summary_of(ref: str, limit: int) -> str | None:
    """The summary of the command `ref` names, shortened to `limit` characters as click would; None when its module
    has no readable source or the attribute is not a function decorated with click's `command` or `group` there."""
    module, _, attribute = ref.partition(":")
    tree = _source_tree(module)
    if tree is None:
        return None
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attribute), None)
    if node is None:
        return None
    calls = [d for d in node.decorator_list if isinstance(d, ast.Call) and _makes_command(d)]
    if not calls:
        return None  # not made a command here: importing it says what it is
    given = {k.arg: k.value for call in calls for k in call.keywords}
    if "hidden" in given or "deprecated" in given:
        return None  # what the help shows then: the imported command says
    said = {name: str(v.value) for name, v in given.items() if isinstance(v, ast.Constant)}
    if any(name in given and name not in said for name in ("short_help", "help")):
        return None  # text built at import time: only the imported command knows it
    if "short_help" in said:
        text: str | None = inspect.cleandoc(said["short_help"])
    elif "help" in said:
        text = said["help"].split("\f", 1)[0]
    else:
        doc = ast.get_docstring(node)
        text = doc.split("\f", 1)[0] if doc is not None else None
    return None if text is None else click.utils.make_default_short_help(text, limit).strip()


@functools.lru_cache(maxsize=64)
def _source_tree(module: str) -> ast.Module | None:
    """The parsed source of `module`, found but not imported (parsed once: one module holds several commands); None
    when it has no readable Python source."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        with open(spec.origin, encoding="utf-8") as source:
            return ast.parse(source.read(), spec.origin)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _makes_command(call: ast.Call) -> bool:
    """Whether a decorator call is click's `command` or `group` (`click.command(...)`, `group.command(...)`)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("command", "group")
