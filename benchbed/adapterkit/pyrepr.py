"""Safe reader for the Python-repr dicts frameworks print (slime's `perf 3: {...}`, verl's pprinted config): literals,
nan/inf, numpy scalars; no eval."""

from __future__ import annotations

import ast
import math
from typing import Any

_NAMES: dict[str, Any] = {"nan": math.nan, "inf": math.inf, "True": True, "False": False, "None": None}
# Scalar wrappers that appear in reprs, e.g. `np.float64(0.5)` (numpy >= 2), `tensor(3.)`, `float('nan')`.
_WRAPPERS = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool_",
        "float",
        "int",
        "tensor",
        "Decimal",
    }
)


class ReprError(ValueError):
    """The text is not a dict of literals a framework would print."""


def parse_repr_dict(text: str) -> dict[str, Any]:
    """Parse a printed dict such as "{'perf/step_time': 14.2, 'train/grad_norm': nan}"."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ReprError(f"not a Python dict: {exc.msg} at column {exc.offset}") from None
    if not isinstance(node, ast.Dict):
        raise ReprError(f"expected a dict, found {type(node).__name__}")
    value = _value(node)
    return {str(k): v for k, v in value.items()}


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_value(k) if k is not None else None: _value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.Attribute) and node.attr in ("nan", "inf"):
        return _NAMES[node.attr]
    if isinstance(node, ast.Call) and len(node.args) == 1 and _callee(node.func) in _WRAPPERS:
        inner = _value(node.args[0])
        if isinstance(inner, str) and inner.lower() in ("nan", "inf", "-inf"):
            return float(inner)
        return inner
    raise ReprError(f"unsupported expression {ast.dump(node)[:60]}")


def _callee(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""
