"""Names a package loads on first use (PEP 562): the one `__getattr__` behind benchbed.api and the kit's shared
helpers, so that importing either imports none of the modules it names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each name of `where` when first asked for: name ->
    "module" (the same name there), "module:attribute", or "module:" (the module itself)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, colon, attribute = where[name].partition(":")
        if colon and not attribute:
            return importlib.import_module(module)
        return getattr(importlib.import_module(module), attribute or name)

    return __getattr__
