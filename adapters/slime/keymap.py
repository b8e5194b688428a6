"""slime's key map (keymap.toml, read by the kit's loader) as the names the parser uses: every release's keys,
since the loop that logs them is the same; the release facts date a run."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.keymaps import KeyMap, load_keymap

KEYMAP: KeyMap = load_keymap(Path(__file__).with_name("keymap.toml"))


def _role(role: str) -> list[tuple[str, str]]:
    """(native, canonical) of a role over every release, each native once."""
    return list(KEYMAP.across_releases(role).items())


def _timer(native: str) -> str:
    """'perf/update_weights_time' -> 'update_weights'."""
    return native.removeprefix("perf/").removesuffix("_time")


def _prefix(role: str) -> str:
    return _role(role)[0][0].rstrip("*")


# Timers measured outside the train block whose time lies inside the same dict's train_wait.
WAIT_CONTAINED: dict[str, str] = {_timer(n): c for n, c in _role("wait_contained")}
# Timed after the train block, before the dict is logged: its time lies in the next step's train_wait.
NEXT_STEP_WAIT_CONTAINED: dict[str, str] = {_timer(n): c for n, c in _role("next_step_wait_contained")}
# Timers nested inside the `train` timer that are model computation.
COMPUTE_IN_TRAIN: tuple[str, ...] = tuple(_timer(n) for n, _ in _role("compute_in_train"))
STEP_TIME_KEYS: tuple[str, ...] = tuple(n for n, _ in _role("step_time"))
WAIT_RATIO_KEY, FRAMEWORK_IDLE = _role("framework")[0]
# Trained tokens per step = the rate key × the timer it divides.
TRAINED_TOKENS_RATE, TRAINED_TOKENS = _role("trained_tokens_rate")[0]
TRAINED_TOKENS_TIME = _role("trained_tokens_time")[0][0]
# Keys that identify which process printed a `perf N:` dict.
TRAINER_PERF_MARKERS: tuple[str, ...] = tuple(n for n, _ in _role("trainer_marker"))
ROLLOUT_PERF_MARKERS: tuple[str, ...] = tuple(n for n, _ in _role("rollout_marker"))
ZERO_STD_PREFIX = _prefix("zero_std_count")
DROP_PREFIX = _prefix("dropped_groups")
DROP_ZERO_STD_PREFIX = _prefix("dropped_zero_std")

# Console file:line of the `perf` log call at each pinned commit -> framework version (the metric code moved from
# slime/utils + slime/ray/rollout.py to slime/observability in #2298), and the files only one side of the move has.
PERF_CALL_SITES: dict[tuple[str, int], str] = {
    (site[0], site[1]): release
    for release in KEYMAP.releases
    for site in KEYMAP.facts(release).get("perf_call_sites", [])
}
LAYOUT_BY_FILE: dict[str, str] = {
    file: KEYMAP.facts(release)["layout"]
    for (file, _), release in PERF_CALL_SITES.items()
    if sum(f == file for f, _ in PERF_CALL_SITES) == 1
}
PINNED_COMMITS: dict[str, str] = {r: f["commit"] for r in KEYMAP.releases if "commit" in (f := KEYMAP.facts(r))}
