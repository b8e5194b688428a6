"""A class's contract, rendered from the class itself: its docstring, then each public method's signature and
docstring, so the Extending pages show the interface the code has today."""

from __future__ import annotations

import importlib
import inspect

from gen_common import DocsError


def load(target: str) -> type:
    """The class named `module:Class`; DocsError when it cannot be imported."""
    module_name, _, name = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise DocsError(f"`benchbed:api {target}`: cannot import it ({exc})") from None
    if not isinstance(found, type):
        raise DocsError(f"`benchbed:api {target}` is not a class")
    return found


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


def _annotation(value: object) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def signature(function: object) -> str:
    """`(self, spec: ExperimentSpec, *, key: str = 'x') -> Handle`: annotations as written (postponed annotations
    are strings; they are shown without quotes), defaults as their repr."""
    sig = inspect.signature(function)
    params, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        text = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name
        star = star or p.kind is p.VAR_POSITIONAL
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        params.append(text)
    returns = "" if sig.return_annotation is sig.empty else f" -> {_annotation(sig.return_annotation)}"
    return f"({', '.join(params)}){returns}"


def _members(cls: type) -> list[tuple[str, object]]:
    """Public methods and annotated class attributes defined on the class itself, in source order."""
    own = dict(vars(cls))
    out = [(name, own[name]) for name in own if not name.startswith("_") and callable(own[name])]
    annotations = {k: v for k, v in own.get("__annotations__", {}).items() if not k.startswith("_")}
    return [*((name, annotations[name]) for name in annotations), *out]


def api_markdown(target: str) -> str:
    """`module:Class` as Markdown: docstring, a code block of its attributes and method signatures, then each
    documented method's docstring."""
    cls = load(target)
    lines, notes = [], []
    for name, member in _members(cls):
        if not callable(member) or isinstance(member, type | str):
            lines.append(f"{name}: {member if isinstance(member, str) else getattr(member, '__name__', member)}")
            continue
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        prefix = "async def" if inspect.iscoroutinefunction(function) else "def"
        lines.append(f"{prefix} {name}{signature(function)}: ...")
        if _doc(function):
            notes.append(f"- `{name}`: {' '.join(_doc(function).split())}")
    head = f"`{target.replace(':', '.')}`" + (f": {' '.join(_doc(cls).split())}" if _doc(cls) else "")
    return "\n".join([head, "", "```python", f"class {cls.__name__}:", *(f"    {line}" for line in lines), "```", "",
                      *notes, ""])  # fmt: skip
