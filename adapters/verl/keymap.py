"""Load keymap.toml (verl keys -> canonical keys, per version and mode) and pick the map for a verl version."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchbed import keys as K
from benchbed.errors import AdapterError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYMAP_FILE = Path(__file__).with_name("keymap.toml")
TIMING_PREFIX = "timing_s/"
V1_MODES = ("v1_sync", "v1_colocate_async", "v1_separate_async")


@dataclass(frozen=True)
class ModeMap:
    """How one verl version's trainer in one mode maps onto the canonical step breakdown."""

    version: str
    mode: str
    step_timer: str  # "" = no timer around the step: trainer.step is the sum of the phase timers
    timing_prefix: str
    first_step: int  # the step number the release logs first (benchbed counts steps from 1)
    components: dict[str, str]
    outside_step: frozenset[str]
    not_trainer: frozenset[str]
    record: str
    framework: dict[str, str]
    native_keys: frozenset[str]
    native_prefixes: tuple[str, ...]

    def native(self, key: str) -> bool:
        return key in self.native_keys or key.startswith(self.native_prefixes)


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.9.1.dev0' -> (0, 9, 1); raises ValueError when there is no leading number."""
    parts = re.findall(r"\d+", text.split("+")[0])
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in parts[:3])


@cache
def _raw() -> dict:
    try:
        return tomllib.loads(KEYMAP_FILE.read_text())["maps"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise AdapterError(f"{KEYMAP_FILE}: cannot read the verl key map ({exc})") from exc


def known_versions() -> list[str]:
    """Key-map versions, oldest first."""
    return sorted(_raw(), key=version_tuple)


def nearest_version(version: str) -> tuple[str, bool]:
    """(key-map version for `version`, exact) — exact when the major.minor has its own map."""
    maps = known_versions()
    try:
        want = version_tuple(version)[:2]
    except ValueError:
        return maps[-1], False
    for name in maps:
        if version_tuple(name)[:2] == want:
            return name, True
    # a map with `until` (the first release it no longer fits) never stands in for that release or later ones
    fitting = [m for m in maps if "until" not in _raw()[m] or want < version_tuple(_raw()[m]["until"])]
    older = [m for m in fitting if version_tuple(m)[:2] <= want]
    return (older[-1] if older else fitting[0]), False


def mode_map(version: str, mode: str) -> ModeMap:
    """The map for a key-map version and trainer mode ('v1' and unknown V1 modes use the sync rules)."""
    raw = _raw()[version]
    modes = raw["modes"]
    key = mode if mode in modes else ("v1_sync" if mode.startswith("v1") and "v1_sync" in modes else None)
    if key is None:
        key = "v0" if "v0" in modes else next(iter(modes))
    spec = modes[key]
    components = dict(raw.get("components", {}))
    bad = {v for v in components.values() if v not in K.TRAINER_COMPONENTS}
    if bad:
        raise AdapterError(f"{KEYMAP_FILE}: maps.{version}.components maps to unknown keys {sorted(bad)}")
    native = raw.get("native", {})
    return ModeMap(
        version=version,
        mode=key,
        step_timer=raw.get("step_timer", "step"),
        timing_prefix=raw.get("timing_prefix", TIMING_PREFIX),
        first_step=int(raw.get("first_step", 1)),
        components=components,
        outside_step=frozenset(spec.get("outside_step", [])),
        not_trainer=frozenset(spec.get("not_trainer", [])),
        record=spec.get("record", "step"),
        framework=dict(raw.get("framework", {})),
        native_keys=frozenset(native.get("keys", [])),
        native_prefixes=tuple(native.get("prefixes", [])),
    )
