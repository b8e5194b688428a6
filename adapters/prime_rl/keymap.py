"""prime-rl's key map (keymap.toml, read by the kit's loader) as the names the metrics-file reader and the emitter use.

Every release's keys are read (a row's keys tell its era; see parse.detect_era), the era markers date the file."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.adapterkit.keymaps import KeyMap, load_keymap

KEYMAP: KeyMap = load_keymap(Path(__file__).with_name("keymap.toml"))
HEAD, LEGACY = KEYMAP.releases[-1], KEYMAP.releases[0]


def _role(role: str) -> dict[str, str]:
    """native -> canonical of a role over every release, in file order."""
    out: dict[str, str] = {}
    for release in KEYMAP.releases:
        for entry in KEYMAP.at(release, role):
            out.setdefault(entry.native, entry.canonical)
    return out


def _matcher(role: str) -> re.Pattern[str]:
    entries = {e.native: e for r in KEYMAP.releases for e in KEYMAP.at(r, role)}
    return re.compile("^(?:" + "|".join(e.regex() for e in entries.values()) + ")$")


TRAINER_TIMERS: dict[str, str] = _role("trainer_timer")  # keys only the trainer's time row has
SHARED_TIMERS: dict[str, str] = _role("shared_timer")  # time/step, time/save_ckpt: both processes log them
TRAINER_MARKER = _matcher("trainer_marker")
ORCHESTRATOR_MARKER = _matcher("orchestrator_marker")
ORCHESTRATOR_KEEP = _matcher("orchestrator_native")
TRAINER_NATIVE: tuple[str, ...] = tuple(_role("trainer_native"))
PAUSE_KEYS: tuple[str, ...] = tuple(_role("pause"))  # the first one a row has is the generator's pause
FRAMEWORK_METRICS: dict[str, str] = _role("framework")
COUNTERS: dict[str, str] = _role("counter")
_MARKERS = [e for r in KEYMAP.releases for e in KEYMAP.at(r, "era_marker")]
HEAD_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _MARKERS if e.first == HEAD))
LEGACY_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _MARKERS if e.last == LEGACY))
