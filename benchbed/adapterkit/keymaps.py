"""Key maps as data: one TOML file per framework, one loader, entries versioned by framework release.

A map file holds `framework`, `releases` (the releases it knows, oldest first), optional `[release."X"]` facts,
and `[[key]]` entries: `native` (the framework's key; in patterns an inner `*` is one path segment, a trailing
`*` any rest), `canonical` (the benchbed key it becomes, '' for keys that only identify a source), `unit`,
`role` (what the adapter does with it), optional `first`/`last` (the releases it applies to, inclusive, as
Holistic Trace Analysis versions its field maps), optional `modes` (trainer modes it applies to) and `note`.
An optional `[lines]` table names the console lines the adapter reads: name = a Python regular expression.
An optional `identify` list holds native keys (patterns as above) that only this framework logs: a tracker history
with any of them is this framework's (`benchbed ingest` without --adapter)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchbed.errors import AdapterError
from benchbed.keys import is_known_key

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

UNITS = ("s", "ratio", "count", "samples", "groups", "versions", "tokens", "tokens/s", "samples/s", "%", "GiB", "")
# The shared vocabulary of `role`: what an adapter does with a key. A new adapter uses these words; verl, slime and
# prime-rl still carry a few roles of their own for keys only their parsers treat specially.
ROLES = {
    "step": "the trainer step's duration (-> trainer.step)",
    "component": "a part of the trainer step (-> trainer.compute, trainer.wait, trainer.weight_sync, ...)",
    "counter": "a per-step count (-> samples.*, groups.*)",
    "framework": "the framework's own figure of a benchbed metric, kept for comparison (-> framework.*)",
    "native": "a figure kept as the framework logged it (-> native.<framework>.*)",
    "marker": "a key that only identifies a framework, release or process (canonical '')",
}


@dataclass(frozen=True)
class KeyEntry:
    """One native key (or key prefix) and what it becomes."""

    native: str
    canonical: str
    unit: str
    role: str
    first: str | None = None
    last: str | None = None
    modes: tuple[str, ...] = ()
    note: str = ""

    @property
    def is_pattern(self) -> bool:
        return "*" in self.native

    @property
    def is_prefix(self) -> bool:
        """A plain prefix: one `*`, at the end."""
        return self.native.count("*") == 1 and self.native.endswith("*")

    def regex(self) -> str:
        pieces = self.native.split("*")
        out = re.escape(pieces[0])
        for i, piece in enumerate(pieces[1:], 1):
            out += (".*" if i == len(pieces) - 1 and not piece else "[^/]+") + re.escape(piece)
        return out

    def matches(self, key: str) -> bool:
        return re.fullmatch(self.regex(), key) is not None if self.is_pattern else key == self.native


_VERSION = re.compile(r"^[vV]?(\d+(?:\.\d+)+)")


def version_key(text: str) -> tuple[int, ...]:
    """'0.9.1.dev0' -> (0, 9, 1); 'v0.3.1' -> (0, 3, 1); ValueError for what is not a dotted version (a commit)."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in match.group(1).split(".")[:3])


def _is_version(text: str) -> bool:
    return _VERSION.match(text.strip()) is not None


@dataclass(frozen=True)
class KeyMap:
    """A framework's key map: its releases in order, facts per release, and the versioned entries."""

    framework: str
    path: Path
    releases: tuple[str, ...]
    release_facts: dict[str, dict[str, Any]]
    entries: tuple[KeyEntry, ...]
    lines: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False)  # [lines], compiled
    identify: tuple[str, ...] = ()  # native keys (patterns) that mark a history as this framework's
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({r: i for i, r in enumerate(self.releases)})

    def identifier(self) -> re.Pattern[str]:
        """One pattern matching every `identify` key (never matches when there are none)."""
        parts = [KeyEntry(n, "", "", "identify").regex() for n in self.identify]
        return re.compile("^(?:" + "|".join(parts) + ")$" if parts else r"(?!)")

    def facts(self, release: str) -> dict[str, Any]:
        return self.release_facts.get(release, {})

    def applies(self, entry: KeyEntry, release: str, mode: str | None = None) -> bool:
        """Whether an entry holds for a release (and a mode, when the entry names modes)."""
        at = self._index[release]
        if entry.first is not None and at < self._index[entry.first]:
            return False
        if entry.last is not None and at > self._index[entry.last]:
            return False
        return not (mode is not None and entry.modes and mode not in entry.modes)

    def at(self, release: str, role: str | None = None, mode: str | None = None) -> list[KeyEntry]:
        """Entries that hold for a release (and mode), optionally of one role, in file order."""
        if release not in self._index:
            raise AdapterError(f"{self.path}: {self.framework} key map has no release {release!r} ({self.releases})")
        return [e for e in self.entries if (role is None or e.role == role) and self.applies(e, release, mode)]

    def across_releases(self, role: str) -> dict[str, str]:
        """native -> canonical of a role over every release (oldest first, each in file order), each native once:
        for parsers that read every release's keys and tell a file's era from the keys it has."""
        out: dict[str, str] = {}
        for release in self.releases:
            for entry in self.at(release, role):
                out.setdefault(entry.native, entry.canonical)
        return out

    def mapping(self, release: str, role: str, mode: str | None = None) -> dict[str, str]:
        """native -> canonical for the exact (non-pattern) entries of one role."""
        return {e.native: e.canonical for e in self.at(release, role, mode) if not e.is_pattern}

    def natives(self, release: str, role: str, mode: str | None = None) -> tuple[str, ...]:
        """Native keys (patterns keep their `*`) of one role, in file order."""
        return tuple(e.native for e in self.at(release, role, mode))

    def matcher(self, release: str, role: str, mode: str | None = None) -> re.Pattern[str]:
        """One compiled pattern matching every native key of one role (use .match)."""
        parts = [e.regex() for e in self.at(release, role, mode)]
        return re.compile("^(?:" + "|".join(parts) + ")$" if parts else r"(?!)")

    def nearest(self, version: str) -> tuple[str, bool]:
        """(release whose map reads `version`, exact). Exact: the release itself, or a numbered release that the
        version extends (0.9 reads 0.9.1). Else the newest numbered release older than it (the oldest when it
        predates them all; a release whose `until` fact the version reaches is skipped); a version that is not a
        number gets the newest release."""
        if version in self._index:
            return version, True
        try:
            want = version_key(version)
        except ValueError:
            return self.releases[-1], False
        numbered = sorted((version_key(r), r) for r in self.releases if _is_version(r))
        for key, name in numbered:
            if want[: len(key)] == key:
                return name, True
        # a release with `until` (the first release its map no longer fits) never stands in for that one or later
        numbered = [(k, r) for k, r in numbered if want < version_key(self.facts(r).get("until", "999.0"))]
        if not numbered:
            return self.releases[-1], False
        older = [name for key, name in numbered if key <= want]
        return (older[-1] if older else numbered[0][1]), False


@cache
def load_keymap(path: Path) -> KeyMap:
    """Read and check a key-map file: known releases, units and canonical keys; AdapterError naming the entry."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise AdapterError(f"{path}: cannot read the key map ({exc})") from exc
    releases = tuple(raw.get("releases") or ())
    if not releases:
        raise AdapterError(f"{path}: a key map needs `releases = [...]`, oldest first")
    entries = []
    for i, item in enumerate(raw.get("key") or []):
        where = f"{path}: [[key]] #{i + 1} ({item.get('native', '?')!r})"
        try:
            entry = KeyEntry(
                native=item["native"],
                canonical=item.get("canonical", ""),
                unit=item.get("unit", ""),
                role=item["role"],
                first=item.get("first"),
                last=item.get("last"),
                modes=tuple(item.get("modes", ())),
                note=item.get("note", ""),
            )
        except (KeyError, TypeError) as exc:
            raise AdapterError(f"{where}: needs `native` and `role` ({exc})") from exc
        for bound in (entry.first, entry.last):
            if bound is not None and bound not in releases:
                raise AdapterError(f"{where}: release {bound!r} is not in releases {list(releases)}")
        if entry.unit not in UNITS:
            raise AdapterError(f"{where}: unit {entry.unit!r} is not one of {list(UNITS)}")
        if entry.canonical and not is_known_key(entry.canonical.rstrip("*")):
            raise AdapterError(f"{where}: canonical key {entry.canonical!r} is not in benchbed/keys.py")
        entries.append(entry)
    facts = raw.get("release") or {}
    unknown = sorted(set(facts) - set(releases))
    if unknown:
        raise AdapterError(f"{path}: [release] tables for unknown releases {unknown}")
    lines = _compile_lines(path, raw.get("lines") or {})
    identify = raw.get("identify") or []
    if not isinstance(identify, list) or not all(isinstance(k, str) and k for k in identify):
        raise AdapterError(f'{path}: `identify` must be a list of native keys, e.g. ["timing_s/step"]')
    framework = raw.get("framework", path.parent.name)
    return KeyMap(framework, path, releases, facts, tuple(entries), lines, identify=tuple(identify))


def _compile_lines(path: Path, table: dict[str, Any]) -> dict[str, re.Pattern[str]]:
    """The `[lines]` table compiled; AdapterError naming the line whose pattern is not a regular expression."""
    compiled = {}
    for name, pattern in table.items():
        try:
            compiled[name] = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise AdapterError(f"{path}: [lines] {name}: not a regular expression ({exc})") from exc
    return compiled
