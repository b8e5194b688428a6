"""prime-rl's key map (keymap.toml, read by the kit's loader) as the names the metrics-file reader and the emitter use.

Every release's keys are read (a row's keys tell its era; see parse.detect_era), the era markers date the file."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.adapterkit.keymaps import KeyMap, load_keymap

KEYMAP: KeyMap = load_keymap(Path(__file__).with_name("keymap.toml"))
HEAD, LEGACY = KEYMAP.releases[-1], KEYMAP.releases[0]


def _matcher(role: str) -> re.Pattern[str]:
    entries = {e.native: e for r in KEYMAP.releases for e in KEYMAP.at(r, role)}
    return re.compile("^(?:" + "|".join(e.regex() for e in entries.values()) + ")$")


TRAINER_TIMERS: dict[str, str] = KEYMAP.across_releases("trainer_timer")  # keys only the trainer's time row has
# time/step, time/save_ckpt: both processes log them
SHARED_TIMERS: dict[str, str] = KEYMAP.across_releases("shared_timer")
TRAINER_MARKER = _matcher("trainer_marker")
ORCHESTRATOR_MARKER = _matcher("orchestrator_marker")
ORCHESTRATOR_KEEP = _matcher("orchestrator_native")
TRAINER_NATIVE: tuple[str, ...] = tuple(KEYMAP.across_releases("trainer_native"))
PAUSE_KEYS: tuple[str, ...] = tuple(KEYMAP.across_releases("pause"))  # the first one a row has is the generator's pause
FRAMEWORK_METRICS: dict[str, str] = KEYMAP.across_releases("framework")
COUNTERS: dict[str, str] = KEYMAP.across_releases("counter")
_MARKERS = [e for r in KEYMAP.releases for e in KEYMAP.at(r, "era_marker")]
HEAD_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _MARKERS if e.first == HEAD))
LEGACY_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _MARKERS if e.last == LEGACY))
