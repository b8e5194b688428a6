"""Plug-ins by entry point, one mechanism for every kind: adapters (`benchbed.adapters`), launchers
(`benchbed.launchers`) and sandbox backends (`benchbed.sandbox_backends`). A site adds its own by installing a
package that names a class in the group; nothing in benchbed is edited."""

from __future__ import annotations

import difflib
import functools
import sys
from importlib import metadata

from benchbed.errors import BenchbedError

ADAPTERS = "benchbed.adapters"
LAUNCHERS = "benchbed.launchers"
SANDBOX_BACKENDS = "benchbed.sandbox_backends"


def entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    """The group's entry points by name, for the current sys.path (nothing is imported)."""
    return _entry_points_on(group, tuple(sys.path))


@functools.lru_cache(maxsize=32)
def _entry_points_on(group: str, path: tuple[str, ...]) -> dict[str, metadata.EntryPoint]:
    """Scanning every installed distribution takes ~0.1 s and a spec asks several times, so the scan is kept per
    sys.path: a package added to sys.path is seen on the next call."""
    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def names(group: str) -> list[str]:
    """The names registered in the group, sorted."""
    return sorted(entry_points(group))


def load_class(group: str, name: str, kind: str, base: type, error: type[BenchbedError]) -> type:
    """The class registered as `name` in `group`, checked to subclass `base`; `error` (naming the `kind`, e.g.
    "launcher") for an unknown name (with a 'did you mean'), an import failure or a class of the wrong kind."""
    eps = entry_points(group)
    if name not in eps:
        close = difflib.get_close_matches(name, list(eps), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise error(f"unknown {kind} {name!r}{hint} (available: {', '.join(sorted(eps)) or 'none'})")
    try:
        loaded = eps[name].load()
    except ImportError as exc:
        raise error(f"{kind} {name!r} cannot be loaded: {exc}") from exc
    if not (isinstance(loaded, type) and issubclass(loaded, base)):
        raise error(f"entry point {name!r} ({eps[name].value}) is not a {base.__module__}.{base.__name__} subclass")
    return loaded
