"""Work out which verl version and trainer mode wrote a run, from its config, metric keys and console."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbed.adapters.verl.keymap import known_versions, nearest_version

from benchbed.adapterkit.detection import Detected

MODES = ("v1_sync", "v1_colocate_async", "v1_separate_async", "v1", "v0", "fully_async", "one_step_off")
# Ray actor that runs the trainer (its name prefixes every console line) -> mode family
ACTOR_MODES = {
    "FullyAsyncTrainer": "fully_async",
    "FullyAsyncRollouter": "fully_async",
    "FullyAsyncTaskRunner": "fully_async",
    "OneStepTaskRunner": "one_step_off",
    "TaskRunnerV1": "v1",
    "TaskRunner": "v0",
    "main_task": "v0",  # the remote function that ran RayPPOTrainer in early releases (0.2)
}
_DISTINCT = ("fully_async", "one_step_off", "v1_separate_async")  # modes whose keys or actors no other path has
_REQ_LINE = re.compile(r"(?im)^verl\s*==\s*([0-9][\w.+-]*)\s*$")


@dataclass
class VerlDetected(Detected):
    """The release and mode (evidence["version"], evidence["mode"] say how each was found) and the key-map release
    the run is read with."""

    keymap: str = ""


def mode_from_config(cfg: dict[str, Any]) -> str | None:
    """Mode from the composed config (printed by the task runner, or Hydra's .hydra/config.yaml)."""
    if "async_training" in cfg:
        return "fully_async"
    if isinstance(cfg.get("rollout"), dict) and "nnodes" in cfg["rollout"]:
        return "one_step_off"  # only the one_step_off config adds a top-level rollout pool
    trainer = cfg.get("trainer") or {}
    if "use_v1" not in trainer:
        return None  # a pre-V1 config, or a printed config whose use_v1 line Ray de-duplicated away
    if not trainer.get("use_v1"):
        return "v0"
    mode = (trainer.get("v1") or {}).get("trainer_mode")
    return f"v1_{mode}" if f"v1_{mode}" in MODES else "v1"


def mode_from_keys(keys: Iterable[str]) -> str | None:
    """Mode from the metric keys that only one trainer path logs."""
    keys = set(keys)
    if "timing_s/timing_s/param_sync" in keys or any(k.startswith("fully_async/") for k in keys):
        return "fully_async"
    if "timing_s/sync_rollout_weights" in keys or "timing_s/generate_async" in keys:
        return "one_step_off"
    if any(k.startswith(("separate_async/", "timing_s/switch_")) for k in keys):
        return "v1_separate_async"
    if any(k.startswith("training/off_policy/") for k in keys):
        return "v1"
    if any(k.startswith(("timing_s/agent_loop/", "perf/mfu/actor_infer")) for k in keys):
        return "v0"
    if "timing_s/step" in keys or _pre_02(keys):
        return "v0"
    return None


def _pre_02(keys: set[str]) -> bool:
    """verl before 0.2 named its timers `timing/<phase>` (later `timing_s/<phase>`)."""
    return any(k.startswith("timing/") for k in keys) and not any(k.startswith("timing_s/") for k in keys)


def mode_from_actors(actors: Iterable[str]) -> str | None:
    for actor in actors:
        if actor in ACTOR_MODES and ACTOR_MODES[actor] in ("fully_async", "one_step_off"):
            return ACTOR_MODES[actor]
    found = {ACTOR_MODES[a] for a in actors if a in ACTOR_MODES}
    return "v1" if "v1" in found else ("v0" if "v0" in found else None)


def version_from_files(run_dir: Path) -> tuple[str, str] | None:
    """verl's version from a requirements/freeze file the run left (pip freeze, wandb's requirements.txt)."""
    names = ("requirements.txt", "pip-freeze.txt", "pip_freeze.txt", "versions.txt")
    candidates = [p for name in names for p in run_dir.glob(f"**/{name}")]
    for path in sorted(candidates)[:20]:
        try:
            match = _REQ_LINE.search(path.read_text(errors="replace")[:500_000])
        except OSError:
            continue
        if match:
            return match.group(1), str(path)
    return None


def version_from_keys(keys: Iterable[str]) -> str | None:
    """A key-map version implied by keys that only some releases log (None if nothing decides it)."""
    keys = set(keys)
    v09 = ("training/off_policy/", "actor/perf/", "separate_async/")
    if any(k.startswith(v09) for k in keys) or "timing_s/sync_rollout_weights" in keys:
        return "0.9"
    if _pre_02(keys):
        return "0.1"
    return None


def detect(
    keys: Iterable[str],
    config: dict[str, Any] | None,
    actors: Iterable[str],
    explicit_version: tuple[str, str] | None,
    plan_mode: str | None,
    warnings: list[str],
) -> VerlDetected:
    """Version and mode with their sources; warnings say what was guessed and what it means."""
    keys = list(keys)
    if explicit_version:
        version, source = explicit_version
        keymap, exact = nearest_version(version)
        if not exact:
            warnings.append(
                f"verl {version} (from {source}) has no key map of its own (maps: {', '.join(known_versions())}); "
                f"parsed with the nearest, {keymap}: timers that release renamed may land in trainer.other"
            )
    else:
        inferred = version_from_keys(keys)
        keymap = inferred or known_versions()[-1]
        version, source = "", "keys" if inferred else "default"
        warnings.append(
            "verl version not recorded in the artifacts (no requirements.txt or pip freeze with verl==X); "
            + (f"metric keys imply the {keymap} key map" if inferred else f"using the newest key map, {keymap}")
        )
    key_mode, actor_mode = mode_from_keys(keys), mode_from_actors(actors)
    partial = bool(config and config.get("_partial"))
    config_mode = mode_from_config(config) if config else None
    # A whole printed config decides; keys and Ray actor names that only one path has come next; a config
    # rebuilt from de-duplicated lines, the launch plan, and the weaker key and actor hints after that.
    candidates = [
        ("config", None if partial else config_mode),
        ("metric keys", key_mode if key_mode in _DISTINCT else None),
        ("console actors", actor_mode if actor_mode in _DISTINCT else None),
        ("config (incomplete)", config_mode if partial else None),
        ("benchbed plan", plan_mode),
        ("metric keys", key_mode),
        ("console actors", actor_mode),
    ]
    mode, mode_source = None, ""
    for name, found in candidates:
        if found and (mode is None or (mode == "v1" and found.startswith("v1_"))):
            mode, mode_source = found, name
    if mode is None:
        mode, mode_source = "v0", "default"
        warnings.append("trainer mode not recognisable from config, keys or console; read as the V0 trainer")
    elif mode == "v1":
        warnings.append(
            "V1 trainer, but trainer.v1.trainer_mode is not recorded (no printed config); "
            "read with the sync rules, which V1's async modes share"
        )
    return VerlDetected(version, mode, {"version": source, "mode": mode_source}, keymap=keymap)
