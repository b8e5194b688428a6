"""The spec-format reference, rendered from the pydantic models: one section per TOML table (the core spec, its
nested tables, each adapter's options table), one row per field with its type, default, bounds and description."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from gen_common import cell
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

BOUNDS = ((Gt, "gt", ">"), (Ge, "ge", "≥"), (Lt, "lt", "<"), (Le, "le", "≤"))


def anchor(path: str) -> str:
    """The section anchor of a table path: `sim.latency` -> `sim-latency` (the root spec is `spec`)."""
    return path.replace(".", "-").replace("_", "-") or "spec"


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def tables(model: type[BaseModel], path: str) -> Iterator[tuple[str, type[BaseModel]]]:
    """(table path, model) for `model` and every model nested in its fields, depth first."""
    yield path, model
    for name, info in model.model_fields.items():
        for nested in _models_in(info.annotation):
            yield from tables(nested, f"{path}.{name}" if path else name)


def type_text(annotation: Any, links: dict[type, str]) -> str:
    """A field's type in words: Literal values as code, models as links to their table, None as 'none'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "none"
    if origin is Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_text(a, links) for a in args)
    if origin is list:
        return f"list of {type_text(args[0], links)}" if args else "list"
    if origin is dict:
        return f"table of {type_text(args[0], links)} → {type_text(args[1], links)}" if args else "table"
    if origin is typing.Annotated:
        return type_text(args[0], links)
    if isinstance(annotation, type) and annotation in links:
        return f"[{annotation.__name__}](#{links[annotation]})"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(info: FieldInfo) -> str:
    found = []
    for item in info.metadata:
        for kind, attr, sign in BOUNDS:
            if isinstance(item, kind):
                found.append(f"{sign} {getattr(item, attr)}")
        if isinstance(item, MinLen) and item.min_length:
            found.append(f"at least {item.min_length} long")
        if isinstance(item, MaxLen):
            found.append(f"at most {item.max_length} long")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            found.append(f"matches `{pattern}`")
    return ", ".join(found)


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
        return "its table's defaults" if isinstance(value, BaseModel) else f"`{value!r}`"
    if info.default is PydanticUndefined:
        return "required"
    if info.default is None:
        return "none"
    value = info.default
    return f'`"{value}"`' if isinstance(value, str) else f"`{str(value).lower() if isinstance(value, bool) else value}`"


def table_markdown(path: str, model: type[BaseModel], links: dict[type, str], title: str = "") -> str:
    """One table's section: heading with a stable anchor, the model's docstring, a row per field."""
    heading = title or (f"`[{path}]`" if path else "The spec's top level")
    doc = " ".join((model.__doc__ or "").split()) if model.__doc__ != BaseModel.__doc__ else ""
    out = [f"### {heading} {{ #{anchor(path)} }}", ""]
    if doc:
        out += [doc, ""]
    out += ["| field | type | default | what it is |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        text = " ".join(filter(None, [info.description or "", f"({_bounds(info)})" if _bounds(info) else ""]))
        out.append(f"| `{name}` | {type_text(info.annotation, links)} | {_default(info)} | {cell(text) or '—'} |")
    return "\n".join([*out, ""])


def spec_markdown(
    root: type[BaseModel],
    adapter_tables: dict[str, tuple[str, type[BaseModel]]],
    launcher_tables: dict[str, type[BaseModel]] | None = None,
) -> str:
    """The core spec and its nested tables, then each adapter's table (name -> (adapter, options model)) and each
    launcher's (name -> options model)."""
    owned = {table: (f"adapter `{adapter}`", model) for table, (adapter, model) in adapter_tables.items()}
    owned.update({table: (f"launcher `{table}`", model) for table, model in (launcher_tables or {}).items()})
    sections = list(tables(root, ""))
    for table, (_, model) in sorted(owned.items()):
        sections += list(tables(model, table))
    links: dict[type, str] = {}
    for path, model in sections:
        links.setdefault(model, anchor(path))
    owners = {table: owner for table, (owner, _) in owned.items()}
    out, seen = [], set()
    for path, model in sections:
        if model in seen:  # a model used by two tables (a time spread, say) is described once, where first used
            continue
        seen.add(model)
        title = f"`[{path}]`: {owners[path]}" if path in owners else ""
        out.append(table_markdown(path, model, links, title))
    return "\n".join(out)
