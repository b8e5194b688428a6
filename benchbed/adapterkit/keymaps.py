"""Key maps as data: one TOML file per framework, one loader, entries versioned by framework release.

A map file holds `framework`, `releases` (the releases it knows, oldest first), optional `[release."X"]` facts,
and `[[key]]` entries: `native` (the framework's key; in patterns an inner `*` is one path segment, a trailing
`*` any rest), `canonical` (the benchbed key it becomes, '' for keys that only identify a source), `unit`,
`role` (what the adapter does with it: one of ROLES, the same words in every adapter), optional `first`/`last`
(the releases it applies to, inclusive, as Holistic Trace Analysis versions its field maps), optional `modes`
(trainer modes it applies to) and `note`. How a key relates to the step or to the process that logs it is data
beside the role, never a role word of its own:
- `within` (component and native keys): where the key's time lies. "step" (the default): inside the trainer step;
  "after_step": after the step's timer closes and before the next step starts, still counted in the step;
  "beside": beside the trainer, never trainer time; or the `native` of another entry: nested inside that timer
  (with a canonical key its time is carved out of that timer, without one it is never counted twice).
- `step_offset` (default 0): 1 when the key's time lies in the step after the one it is logged with.
- `process`: the process that logs the key, when the framework's processes share one log (one of PROCESSES;
  '' = any of them).
- `rate_timer` (a rate, unit `*/s`): the native key of the timer it was divided by; the count is rate x timer.
An optional `[lines]` table names the console lines the adapter reads: name = a Python regular expression.
An optional `identify` list holds native keys (patterns as above) that only this framework logs: a tracker history
with any of them is this framework's (`benchbed ingest` without --adapter). An optional `extends` names the framework
whose key map this one extends (a fork that logs its keys and more of its own, such as Miles of slime): the fork's
parser reads the base's keys through the base's map, and a history both recognise is the fork's. The loader
refuses an unknown role, field, unit, canonical key, release, `within`, `process` or `rate_timer`, naming the file
and the entry."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchbed.errors import AdapterError
from benchbed.keys import QUALITY_EVAL_PREFIX, eval_key, is_known_key

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

UNITS = ("s", "ratio", "count", "samples", "groups", "versions", "tokens", "tokens/s", "samples/s", "%", "GiB", "")
# The vocabulary of `role`, shared by every adapter: what an adapter does with a key.
ROLES = {
    "step": "the trainer step's duration (-> trainer.step)",
    "component": "a timed part of a step (-> trainer.compute, trainer.wait, trainer.weight_sync, generator.paused)",
    "counter": "a per-step count (-> samples.*, groups.*)",
    "framework": "the framework's own figure of a benchbed metric, kept for comparison (-> framework.*)",
    "native": "a figure kept as the framework logged it (-> native.<framework>.*)",
    "quality": "a figure of learning (-> quality.reward_mean; a prefix to quality.eval.*: each score by its name)",
    "marker": "a key that only identifies a framework, release or process (canonical '')",
}
# `within` words; any other value names the native key of the timer an entry is nested in.
WITHIN = {
    "step": "inside the trainer step (the default)",
    "after_step": "after the step's timer closes, before the next step starts; counted in the step",
    "beside": "beside the trainer; never trainer time",
}
# `process`: which process logs a key, for frameworks whose processes write one log.
PROCESSES = ("trainer", "orchestrator", "rollout")
_FIELDS = {"native", "canonical", "unit", "role", "first", "last", "modes", "note"}
_FIELDS |= {"within", "step_offset", "process", "rate_timer"}


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
    within: str = "step"  # a WITHIN word, or the native key of the timer this one is nested in
    step_offset: int = 0  # 1: its time lies in the step after the one it is logged with
    process: str = ""  # the process that logs it ('' = any)
    rate_timer: str = ""  # a rate: the native key of the timer it was divided by

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

    def canonical_for(self, key: str) -> str:
        """The canonical key of a native key this entry matches: a pattern whose canonical ends in `*` carries the
        rest of the native key over (a prefix, or any pattern under quality.eval.*: what follows its literal head;
        another pattern: the whole key), `/` as `.` (val-core/gsm8k/acc under quality.eval.* is
        quality.eval.gsm8k.acc, eval/gsm8k/effective/a/avg@4 under eval/*/effective/*/avg@* is
        quality.eval.gsm8k.effective.a.avg_at_4; see benchbed.keys.eval_key)."""
        if not (self.is_pattern and self.canonical.endswith("*")):
            return self.canonical
        to_eval = self.canonical == QUALITY_EVAL_PREFIX + "*"
        rest = key[len(self.native.split("*")[0]) :] if self.is_prefix or to_eval else key
        if to_eval:
            return eval_key(rest)
        return self.canonical[:-1] + rest.replace("/", ".")


def quality_key(entries: Sequence[KeyEntry], key: str) -> str | None:
    """The quality.* key a native key is logged as under `entries` (a release's quality-role entries), if any."""
    return next((e.canonical_for(key) for e in entries if e.matches(key)), None)


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
    extends: str = ""  # the framework whose key map this one extends ('' = none)
    _index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({r: i for i, r in enumerate(self.releases)})

    def identifier(self) -> re.Pattern[str]:
        """One pattern matching every `identify` key (never matches when there are none)."""
        return pattern(KeyEntry(n, "", "", "marker") for n in self.identify)

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

    def at(
        self,
        release: str,
        role: str | None = None,
        mode: str | None = None,
        *,
        within: str | None = None,
        process: str | None = None,
    ) -> list[KeyEntry]:
        """Entries that hold for a release (and mode), optionally of one role, `within` and `process`, in file order."""
        if release not in self._index:
            raise AdapterError(f"{self.path}: {self.framework} key map has no release {release!r} ({self.releases})")
        return [e for e in self.entries if _selected(e, role, within, process) and self.applies(e, release, mode)]

    def across(self, role: str, *, within: str | None = None, process: str | None = None) -> list[KeyEntry]:
        """Entries of a role over every release (oldest first, each in file order), each native once: for parsers
        that read every release's keys and tell a file's era from the keys it has."""
        out: dict[str, KeyEntry] = {}
        for release in self.releases:
            for entry in self.at(release, role, within=within, process=process):
                out.setdefault(entry.native, entry)
        return list(out.values())

    def across_releases(self, role: str, *, within: str | None = None, process: str | None = None) -> dict[str, str]:
        """native -> canonical of `across(...)`."""
        return {e.native: e.canonical for e in self.across(role, within=within, process=process)}

    def mapping(self, release: str, role: str, mode: str | None = None, *, within: str | None = None) -> dict[str, str]:
        """native -> canonical for the exact (non-pattern) entries of one role (and `within`)."""
        return {e.native: e.canonical for e in self.at(release, role, mode, within=within) if not e.is_pattern}

    def natives(self, release: str, role: str, mode: str | None = None) -> tuple[str, ...]:
        """Native keys (patterns keep their `*`) of one role, in file order."""
        return tuple(e.native for e in self.at(release, role, mode))

    def matcher(self, release: str, role: str, mode: str | None = None) -> re.Pattern[str]:
        """One compiled pattern matching every native key of one role (use .match)."""
        return pattern(self.at(release, role, mode))

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


def _selected(entry: KeyEntry, role: str | None, within: str | None, process: str | None) -> bool:
    return (
        (role is None or entry.role == role)
        and (within is None or entry.within == within)
        and (process is None or entry.process == process)
    )


def pattern(entries: Iterable[KeyEntry]) -> re.Pattern[str]:
    """One compiled pattern matching the native key of any entry (never matches when there are none)."""
    parts = [e.regex() for e in entries]
    return re.compile("^(?:" + "|".join(parts) + ")$" if parts else r"(?!)")


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
    items = raw.get("key") or []
    where = [f"{path}: [[key]] #{i + 1} ({item.get('native', '?')!r})" for i, item in enumerate(items)]
    entries = [_entry(at, item, releases) for at, item in zip(where, items, strict=True)]
    natives = {e.native for e in entries}
    for at, entry in zip(where, entries, strict=True):
        if entry.within not in WITHIN and entry.within not in natives:
            raise AdapterError(f"{at}: within {entry.within!r} is neither one of {list(WITHIN)} nor a native key here")
        if entry.rate_timer and entry.rate_timer not in natives:
            raise AdapterError(f"{at}: rate_timer {entry.rate_timer!r} is not the native key of an entry here")
    facts = raw.get("release") or {}
    unknown = sorted(set(facts) - set(releases))
    if unknown:
        raise AdapterError(f"{path}: [release] tables for unknown releases {unknown}")
    lines = _compile_lines(path, raw.get("lines") or {})
    identify = raw.get("identify") or []
    if not isinstance(identify, list) or not all(isinstance(k, str) and k for k in identify):
        raise AdapterError(f'{path}: `identify` must be a list of native keys, e.g. ["timing_s/step"]')
    extends = raw.get("extends", "")
    if not isinstance(extends, str):
        raise AdapterError(f'{path}: `extends` must name a framework, e.g. "slime"')
    framework = raw.get("framework", path.parent.name)
    return KeyMap(framework, path, releases, facts, tuple(entries), lines, identify=tuple(identify), extends=extends)


def _entry(where: str, item: dict[str, Any], releases: tuple[str, ...]) -> KeyEntry:
    """One `[[key]]` table checked on its own; AdapterError naming it (`where`) and what was expected."""
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise AdapterError(f"{where}: unknown field(s) {unknown}; a [[key]] takes {sorted(_FIELDS)}")
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
            within=item.get("within", "step"),
            step_offset=item.get("step_offset", 0),
            process=item.get("process", ""),
            rate_timer=item.get("rate_timer", ""),
        )
    except (KeyError, TypeError) as exc:
        raise AdapterError(f"{where}: needs `native` and `role` ({exc})") from exc
    if entry.role not in ROLES:
        raise AdapterError(f"{where}: role {entry.role!r} is not one of {list(ROLES)} (how it relates to the step "
                           "or process goes in `within`, `step_offset`, `process`, `rate_timer`)")  # fmt: skip
    for bound in (entry.first, entry.last):
        if bound is not None and bound not in releases:
            raise AdapterError(f"{where}: release {bound!r} is not in releases {list(releases)}")
    if entry.unit not in UNITS:
        raise AdapterError(f"{where}: unit {entry.unit!r} is not one of {list(UNITS)}")
    if entry.canonical and not is_known_key(entry.canonical.rstrip("*")):
        raise AdapterError(f"{where}: canonical key {entry.canonical!r} is not in benchbed/keys.py")
    if entry.within != "step" and entry.role not in ("component", "native"):
        raise AdapterError(f"{where}: `within` is for component and native keys, not {entry.role!r}")
    if not isinstance(entry.step_offset, int) or isinstance(entry.step_offset, bool) or entry.step_offset not in (0, 1):
        raise AdapterError(f"{where}: step_offset must be 0 or 1, not {entry.step_offset!r}")
    if entry.process and entry.process not in PROCESSES:
        raise AdapterError(f"{where}: process {entry.process!r} is not one of {list(PROCESSES)}")
    if entry.rate_timer and not entry.unit.endswith("/s"):
        raise AdapterError(f"{where}: rate_timer is for a rate (unit '.../s'), not unit {entry.unit!r}")
    return entry


def _compile_lines(path: Path, table: dict[str, Any]) -> dict[str, re.Pattern[str]]:
    """The `[lines]` table compiled; AdapterError naming the line whose pattern is not a regular expression."""
    compiled = {}
    for name, pattern in table.items():
        try:
            compiled[name] = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise AdapterError(f"{path}: [lines] {name}: not a regular expression ({exc})") from exc
    return compiled
