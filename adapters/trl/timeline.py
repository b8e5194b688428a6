"""TRL's profiling timers from a W&B offline history, laid on a timeline.

TRL logs each timed block as its own W&B row, `profiling/Time taken: <Trainer>.<method>` = seconds, at the moment
the block ends; the Trainer's W&B callback logs the step's figures (`train/loss`, …, with `train/global_step` = k)
when step k ends (W&B also stamps the latest `train/global_step` on every other row). So a block's span is
[row time − seconds, row time], and it belongs to the first step logged after it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from benchbed.adapterkit.keymaps import load_keymap

PROFILING = "profiling/Time taken: "
GLOBAL_STEP = "train/global_step"
KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


@dataclass
class Timeline:
    """Seconds since `origin` (epoch seconds of the W&B run's start)."""

    origin: float
    step_bounds: dict[int, tuple[float, float]] = field(default_factory=dict)
    components: dict[int, list[tuple[str, str, float, float]]] = field(default_factory=dict)  # key, phase, t0, t1
    generation: dict[int, tuple[float, float]] = field(default_factory=dict)  # first generation start, last end
    natives: dict[int, dict[str, float]] = field(default_factory=dict)  # other timers, summed per step
    calls: dict[str, int] = field(default_factory=dict)  # profiled method -> times it ran
    sources: list[str] = field(default_factory=list)


def phase_of(method: str) -> str:
    """generation, reward or weight_sync, from the profiled method's name."""
    if method.endswith("_calculate_rewards"):
        return "reward"
    return "weight_sync" if method.endswith("sync_weights") else "generation"


def read_timeline(run_dir: Path, warnings: list[str], origin: float | None = None) -> Timeline | None:
    """The run's W&B offline history as a timeline, in seconds since `origin` (epoch; default: W&B's run start, else
    the first step's start); None (with a warning when there is one) if it cannot be read."""
    try:
        from benchbed.adapterkit.histories.wandb_file import find_wandb_file, read_wandb_file, run_dirs_under
    except ImportError:
        if (run_dir / "wandb").is_dir():
            warnings.append("this benchbed has no W&B history reader (benchbed.adapterkit.histories); no timeline")
        return None
    dirs = run_dirs_under(run_dir)
    if not dirs:
        return None
    if len(dirs) > 1:
        warnings.append(f"{len(dirs)} W&B runs under {run_dir / 'wandb'}; the last is read")
    wandb_file = find_wandb_file(dirs[-1])
    if wandb_file is None:
        return None
    try:
        history = read_wandb_file(wandb_file)
    except Exception as exc:  # a damaged history loses the timeline, never the run
        warnings.append(f"{wandb_file}: W&B history unreadable ({str(exc).splitlines()[0]}); no timeline")
        return None
    timeline = timeline_from(history.frame, warnings, release=KEYMAP.nearest("")[0], origin=origin)
    timeline.sources.append(str(wandb_file))
    return timeline


def timeline_from(frame: pd.DataFrame, warnings: list[str], release: str, origin: float | None = None) -> Timeline:
    """Pure: a history frame (`step`, `wall_time`, key columns) -> the timeline."""
    components = KEYMAP.at(release, "component", "sync")
    natives = KEYMAP.at(release, "native", "sync")
    frame = frame.sort_values("step", kind="stable")
    profiled = [c for c in frame.columns if isinstance(c, str) and c.startswith(PROFILING)]
    runtime = frame["_runtime"] if "_runtime" in frame.columns else None
    walls = frame["wall_time"].to_numpy(dtype=float)
    if origin is None:
        origin = float(pd.Series(walls - runtime.to_numpy(dtype=float)).min()) if runtime is not None else math.nan
    timeline = Timeline(origin=origin)
    pending: list[tuple[str, float, float]] = []  # native key, start, end (epoch)
    steps = frame[GLOBAL_STEP].to_numpy(dtype=float) if GLOBAL_STEP in frame.columns else [math.nan] * len(frame)
    logged = [c for c in frame.columns if isinstance(c, str) and c.startswith("train/") and c != GLOBAL_STEP]
    step_end = frame[logged].notna().any(axis=1).to_numpy() if logged else [False] * len(frame)
    values = {c: frame[c].to_numpy(dtype=float) for c in profiled}
    previous_end: float | None = None
    for row, wall in enumerate(walls):
        for c in profiled:
            seconds = values[c][row]
            if math.isfinite(seconds):
                pending.append((c, wall - seconds, wall))
                method = c[len(PROFILING) :]
                timeline.calls[method] = timeline.calls.get(method, 0) + 1
        step = steps[row]
        if not step_end[row] or not math.isfinite(step) or int(step) in timeline.step_bounds:
            continue
        k = int(step)
        start = previous_end if previous_end is not None else min((s for _, s, _ in pending), default=wall)
        timeline.step_bounds[k] = (start, wall)
        previous_end = wall
        for key, s0, s1 in pending:
            entry = next((e for e in components if e.matches(key)), None)
            if entry is not None:
                timeline.components.setdefault(k, []).append((entry.canonical, phase_of(key), s0, s1))
                if entry.canonical == "trainer.wait":
                    g0, g1 = timeline.generation.get(k, (s0, s1))
                    timeline.generation[k] = (min(g0, s0), max(g1, s1))
                continue
            native = next((e for e in natives if e.matches(key)), None)
            name = native.canonical if native is not None else "native.trl.profiling." + key[len(PROFILING) :]
            timeline.natives.setdefault(k, {})[name] = timeline.natives.get(k, {}).get(name, 0.0) + (s1 - s0)
        pending = []
    if math.isnan(timeline.origin):
        timeline.origin = min((b[0] for b in timeline.step_bounds.values()), default=0.0)
    if pending:
        warnings.append(f"{len(pending)} profiling rows after the last logged step (a step cut short) left out")
    _shift(timeline)
    return timeline


def _shift(timeline: Timeline) -> None:
    """Epoch seconds -> seconds since the origin."""
    o = timeline.origin
    timeline.step_bounds = {k: (a - o, b - o) for k, (a, b) in timeline.step_bounds.items()}
    timeline.components = {k: [(key, ph, a - o, b - o) for key, ph, a, b in v] for k, v in timeline.components.items()}
    timeline.generation = {k: (a - o, b - o) for k, (a, b) in timeline.generation.items()}
