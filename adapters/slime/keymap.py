"""slime's key map (keymap.toml, read by the kit's loader) as the names the parser uses: every release's keys,
since the loop that logs them is the same; the release facts date a run."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapterkit.keymaps import KeyEntry, KeyMap, load_keymap, quality_key

KEYMAP: KeyMap = load_keymap(Path(__file__).with_name("keymap.toml"))


def _timer(native: str) -> str:
    """'perf/update_weights_time' -> 'update_weights'."""
    return native.removeprefix("perf/").removesuffix("_time")


TRAIN_WAIT = "perf/train_wait_time"  # the trainer's wait for a batch, the timers within it included
TRAIN_BLOCK = "perf/train_time"  # the train block
_WITHIN_WAIT = KEYMAP.across("component", within=TRAIN_WAIT)
# Timers measured outside the train block whose time lies inside the same dict's train_wait.
WAIT_CONTAINED: dict[str, str] = {_timer(e.native): e.canonical for e in _WITHIN_WAIT if e.step_offset == 0}
# Timed after the train block, before the dict is logged: its time lies in the next step's train_wait.
NEXT_STEP_WAIT_CONTAINED: dict[str, str] = {_timer(e.native): e.canonical for e in _WITHIN_WAIT if e.step_offset == 1}
# Timers nested inside the `train` timer that are model computation.
COMPUTE_IN_TRAIN: tuple[str, ...] = tuple(_timer(n) for n in KEYMAP.across_releases("component", within=TRAIN_BLOCK))
STEP_TIME_KEYS: tuple[str, ...] = tuple(KEYMAP.across_releases("step"))
WAIT_RATIO_KEY, FRAMEWORK_IDLE = next(iter(KEYMAP.across_releases("framework").items()))
# Trained tokens per step = the rate key × the timer it divides.
_RATE = next(e for e in KEYMAP.across("counter") if e.rate_timer)
TRAINED_TOKENS_RATE, TRAINED_TOKENS, TRAINED_TOKENS_TIME = _RATE.native, _RATE.canonical, _RATE.rate_timer
# Keys that identify which process printed a `perf N:` dict.
TRAINER_PERF_MARKERS: tuple[str, ...] = tuple(KEYMAP.across_releases("marker", process="trainer"))
ROLLOUT_PERF_MARKERS: tuple[str, ...] = tuple(KEYMAP.across_releases("marker", process="rollout"))
# The RolloutManager's group counts (patterns), summed per canonical key in file order.
ROLLOUT_COUNTERS: tuple[KeyEntry, ...] = tuple(KEYMAP.across("counter", process="rollout"))
# APRIL's `partial_rollout N:` dict (printed by the trainer): its token counters and its own off-policy share.
PARTIAL_ROLLOUT_KEYS: dict[str, str] = {
    native: canonical
    for role in ("counter", "framework")
    for native, canonical in KEYMAP.across_releases(role).items()
    if native.startswith("partial_rollout/")
}

# The training reward (trainer side) and the evaluation figures (rollout side).
QUALITY: tuple[KeyEntry, ...] = tuple(KEYMAP.across("quality"))


def quality_of(key: str) -> str | None:
    """The quality.* key a slime key is logged as (rollout/raw_reward, eval/<dataset>...), if it is one."""
    return quality_key(QUALITY, key)


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
