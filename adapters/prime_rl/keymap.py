"""prime-rl's key map (keymap.toml, read by the kit's loader) as the names the metrics-file reader and the emitter use.

Every release's keys are read (a row's keys tell its era; see parse.detect_era); markers of no process date a file."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.keymaps import KeyEntry, KeyMap, load_keymap, pattern, quality_key

KEYMAP: KeyMap = load_keymap(Path(__file__).with_name("keymap.toml"))
HEAD, LEGACY = KEYMAP.releases[-1], KEYMAP.releases[0]


TRAINER_TIMERS: dict[str, str] = KEYMAP.across_releases("component", process="trainer")  # only the trainer's time row
# time/step, time/save_ckpt: both processes log them
SHARED_TIMERS: dict[str, str] = KEYMAP.across_releases("step", process="") | KEYMAP.across_releases(
    "component", process=""
)
TRAINER_MARKER = pattern(KEYMAP.across("marker", process="trainer"))
ORCHESTRATOR_MARKER = pattern(KEYMAP.across("marker", process="orchestrator"))
TRAINER_NATIVE: tuple[str, ...] = tuple(KEYMAP.across_releases("native", process="trainer"))
# the first of these a row has is the generator's pause
PAUSE_KEYS: tuple[str, ...] = tuple(KEYMAP.across_releases("component", process="orchestrator"))
FRAMEWORK_METRICS: dict[str, str] = KEYMAP.across_releases("framework")
COUNTERS: dict[str, str] = KEYMAP.across_releases("counter")
QUALITY: tuple[KeyEntry, ...] = tuple(KEYMAP.across("quality"))
# the orchestrator figures a row keeps: its native keys and its learning figures
ORCHESTRATOR_KEEP = pattern([*KEYMAP.across("native", process="orchestrator"), *QUALITY])


def quality_of(key: str) -> str | None:
    """The quality.* key an orchestrator key is logged as (the training reward, evaluation scores), if any."""
    return quality_key(QUALITY, key)


# markers of no process date a file: those of the newest release and those of the oldest
_ERA = [e for r in KEYMAP.releases for e in KEYMAP.at(r, "marker", process="")]
HEAD_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _ERA if e.first == HEAD))
LEGACY_MARKERS: tuple[str, ...] = tuple(dict.fromkeys(e.native for e in _ERA if e.last == LEGACY))
