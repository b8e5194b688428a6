"""One registry for every extension kind (adapters, launchers, sandbox backends, history readers, metrics, studies,
lever sets): names come from an entry-point group (a package a site installs) or from registration in-process
(`Registry.register`, for code that is already running); either may name the object lazily as `module:object`.
Loading checks the object's kind; every failure is the registry's own error, one line, with a 'did you mean'."""

from __future__ import annotations

import difflib
import functools
import importlib
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from benchbed.errors import BenchbedError

if TYPE_CHECKING:
    from importlib import metadata

T = TypeVar("T")


@functools.lru_cache(maxsize=32)
def _entry_points_on(group: str, path: tuple[str, ...]) -> dict[str, metadata.EntryPoint]:
    """Scanning every installed distribution takes ~0.1 s, so the scan is kept per sys.path: a package added to
    sys.path is seen on the next call. (importlib.metadata loads here: a command that names no plug-in skips it.)"""
    from importlib import metadata

    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def _import_ref(ref: str) -> Any:
    """The object `module:attr.attr` names (or the module, without `:`)."""
    module, _, attrs = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in filter(None, attrs.split(".")):
        obj = getattr(obj, attr)
    return obj


class Registry(Generic[T]):
    """The objects of one kind by name. `group`: the entry-point group; `kind`: what errors call one ("launcher");
    `check`: what a loaded object must be (a base class, or a predicate with what it expects in words); `error`:
    the BenchbedError subclass every failure raises. Nothing is cached here: Python's module cache imports each
    module once, and a fresh import (a module dropped from sys.modules) is seen on the next load."""

    def __init__(
        self,
        group: str,
        kind: str,
        check: type | tuple[Callable[[Any], bool], str],
        error: type[BenchbedError] = BenchbedError,
    ) -> None:
        self.group, self.kind, self.error = group, kind, error
        if isinstance(check, type):
            base = check
            self._check: Callable[[Any], bool] = lambda obj: isinstance(obj, type) and issubclass(obj, base)
            self._expected = f"a {base.__module__}.{base.__name__} subclass"
        else:
            self._check, self._expected = check
        self._registered: dict[str, Any] = {}
        self._lock = threading.Lock()

    def entry_points(self) -> dict[str, metadata.EntryPoint]:
        """The group's entry points by name, for the current sys.path (nothing is imported)."""
        return _entry_points_on(self.group, tuple(sys.path))

    def register(self, name: str, obj: T | str) -> None:
        """Register `obj` (or its `module:object` reference, imported on first use) as `name` in this process;
        a name registered here is found before an entry point of the same name."""
        with self._lock:
            if name in self._registered and self._registered[name] is not obj:
                raise self.error(f"{self.kind} {name!r} registered twice")
            self._registered[name] = obj

    def names(self) -> list[str]:
        """Every registered name, sorted (nothing is imported)."""
        return sorted(set(self._registered) | set(self.entry_points()))

    def __contains__(self, name: object) -> bool:
        return name in self._registered or name in self.entry_points()

    def unknown(self, name: str) -> BenchbedError:
        """The error for a name nothing registers: the close match, and what is registered."""
        known = self.names()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return self.error(f"unknown {self.kind} {name!r}{hint} (available: {', '.join(known) or 'none'})")

    def reference(self, name: str) -> str | None:
        """The `module:object` that names `name`'s object, without importing it; None for an object registered as
        itself or a name nothing registers."""
        ref = self._registered.get(name)
        if ref is None and name in (eps := self.entry_points()):
            ref = eps[name].value
        return ref if isinstance(ref, str) else None

    def load(self, name: str) -> T:
        """The object registered as `name`, imported on first use and checked to be of this kind."""
        if name in self._registered:
            ref = self._registered[name]
            where = ref if isinstance(ref, str) else None
        elif name in (eps := self.entry_points()):
            ref = where = eps[name].value
        else:
            raise self.unknown(name)
        try:
            obj = _import_ref(ref) if isinstance(ref, str) else ref
        except (ImportError, AttributeError) as exc:
            raise self.error(f"{self.kind} {name!r} cannot be loaded: {exc}") from exc
        if not self._check(obj):
            what = f"entry point {name!r} ({where})" if where else f"{self.kind} {name!r}"
            raise self.error(f"{what} is not {self._expected}")
        return obj

    def load_all(self) -> dict[str, T]:
        """Every registered object by name; one that cannot load raises (a broken plug-in is never silently gone)."""
        return {name: self.load(name) for name in self.names()}
