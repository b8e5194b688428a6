"""verl's key map (keymap.toml, read by the kit's loader) as the per-release, per-mode view the step parser uses."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.adapterkit.keymaps import KeyEntry, KeyMap, load_keymap, quality_key

KEYMAP_FILE = Path(__file__).with_name("keymap.toml")
TIMING_PREFIX = "timing_s/"


@dataclass(frozen=True)
class ModeMap:
    """How one verl release's trainer in one mode maps onto the canonical step breakdown (timer names without
    the `timing_s/` prefix)."""

    version: str
    mode: str
    step_timer: str  # "" = no timer around the step: trainer.step is the sum of the phase timers
    timing_prefix: str
    first_step: int  # the step number the release logs first (benchbed counts steps from 1)
    components: dict[str, str]  # timers inside the step timer
    after_step: dict[str, str]  # timers after the step timer closes, counted in the step
    not_trainer: frozenset[str]  # timers nested in a counted timer or run beside the trainer: never summed
    record: str
    framework: dict[str, str]  # native -> canonical agg key, kept per step (framework.<metric> and counters)
    native_keys: frozenset[str]
    native_prefixes: tuple[str, ...]
    quality: tuple[KeyEntry, ...] = ()  # the training reward and validation scores (quality.*)
    # what the step parser does with each native key, filled as keys are met (emit._classifier): kept with the map,
    # which mode_map makes once, so that a run read in batches (benchbed watch) classifies each key once
    actions: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)

    def native(self, key: str) -> bool:
        return key in self.native_keys or key.startswith(self.native_prefixes)

    def quality_key(self, key: str) -> str | None:
        """The quality.* key a native key is logged as, if it is one."""
        return quality_key(self.quality, key)


def keymap() -> KeyMap:
    return load_keymap(KEYMAP_FILE)


def known_versions() -> list[str]:
    """Key-map releases, oldest first."""
    return list(keymap().releases)


def nearest_version(version: str) -> tuple[str, bool]:
    """(key-map release for `version`, exact): exact when the major.minor has its own map."""
    return keymap().nearest(version)


@functools.cache
def mode_map(version: str, mode: str) -> ModeMap:
    """The map for a key-map release and trainer mode ('v1' and unknown V1 modes use the sync rules); made once
    per release and mode."""
    km = keymap()
    facts = km.facts(version)
    modes = facts.get("modes", [])
    key = mode if mode in modes else ("v1_sync" if mode.startswith("v1") and "v1_sync" in modes else None)
    if key is None:
        key = "v0" if "v0" in modes else modes[0]
    natives = km.at(version, "native", key)
    prefix = facts.get("timing_prefix", TIMING_PREFIX)

    def _timer(native: str) -> str:
        return native.removeprefix(prefix)

    steps = km.natives(version, "step", key)
    return ModeMap(
        version=version,
        mode=key,
        step_timer=_timer(steps[0]) if steps else "",
        timing_prefix=prefix,
        first_step=int(facts.get("first_step", 1)),
        components={_timer(n): c for n, c in km.mapping(version, "component", key, within="step").items()},
        after_step={_timer(n): c for n, c in km.mapping(version, "component", key, within="after_step").items()},
        not_trainer=frozenset(
            _timer(e.native) for e in km.at(version, "component", key) if e.within not in ("step", "after_step")
        ),
        record="sync_cycle" if key in facts.get("sync_cycle_modes", []) else "step",
        framework=km.mapping(version, "framework", key) | km.mapping(version, "counter", key),
        native_keys=frozenset(e.native for e in natives if not e.is_prefix),
        native_prefixes=tuple(e.native[:-1] for e in natives if e.is_prefix),
        quality=tuple(km.at(version, "quality", key)),
    )
