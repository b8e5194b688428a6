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

from benchbed.adapterkit.keymaps import KeyEntry, load_keymap

PROFILING = "profiling/Time taken: "
GLOBAL_STEP = "train/global_step"
KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))


@dataclass
class Timeline:
    """Seconds since `origin` (epoch seconds)."""

    origin: float
    step_bounds: dict[int, tuple[float, float]] = field(default_factory=dict)
    # per step, (trace key, t0, t1) in painting order: a later span is drawn over an earlier one (keymap.toml order)
    components: dict[int, list[tuple[str, float, float]]] = field(default_factory=dict)
    generation: dict[int, tuple[float, float]] = field(default_factory=dict)  # generation start to scoring end
    natives: dict[int, dict[str, float]] = field(default_factory=dict)  # other timers, summed per step
    sources: list[str] = field(default_factory=list)
    partial: bool = False  # the W&B record log is damaged: the rows after the damage are lost


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
    warnings.extend(history.warnings)  # where the record log is damaged, and what was lost
    timeline = timeline_from(history.frame, warnings, release=KEYMAP.nearest("")[0], origin=origin)
    timeline.sources.append(str(wandb_file))
    timeline.partial = history.partial
    return timeline


def timeline_from(frame: pd.DataFrame, warnings: list[str], release: str, origin: float | None = None) -> Timeline:
    """Pure: a history frame (`step`, `wall_time`, key columns) -> the timeline."""
    frame = frame.sort_values("step", kind="stable")
    profiled = [c for c in frame.columns if isinstance(c, str) and c.startswith(PROFILING)]
    walls = frame["wall_time"].to_numpy(dtype=float)
    # TRL names train/global_step its W&B step (define_metric("*")): the reader makes it the frame's step, which on a
    # row that logs train/* keys (the only rows read for a step) is that key's value
    steps = frame[GLOBAL_STEP if GLOBAL_STEP in frame.columns else "step"].to_numpy(dtype=float)
    logged = [c for c in frame.columns if isinstance(c, str) and c.startswith("train/") and c != GLOBAL_STEP]
    step_end = frame[logged].notna().any(axis=1).to_numpy() if logged else [False] * len(frame)
    values = {c: frame[c].to_numpy(dtype=float) for c in profiled}
    cutter = StepCutter(Timeline(origin=math.nan if origin is None else origin), release)
    for row, wall in enumerate(walls):
        cutter.row(float(wall), float(steps[row]), bool(step_end[row]), {c: float(values[c][row]) for c in profiled})
    timeline = cutter.timeline
    if math.isnan(timeline.origin):
        timeline.origin = min((b[0] for b in timeline.step_bounds.values()), default=0.0)
    if cutter.pending:
        warnings.append(f"{len(cutter.pending)} profiling rows after the last logged step (a step cut short) left out")
    _shift(timeline)
    return timeline


@dataclass
class StepCutter:
    """History rows, in order, cut into steps on `timeline` (epoch seconds): a row's profiling timers are spans that
    end at the row's time; a row logging train/* keys ends its step, which starts where the previous step ended (the
    first, where its first timed block began). The parser feeds it a whole history, the live reader row by row."""

    timeline: Timeline
    release: str
    pending: list[tuple[str, float, float]] = field(default_factory=list)  # native key, start, end (epoch)
    previous_end: float | None = None
    _entries: tuple[list[KeyEntry], list[KeyEntry], list[KeyEntry]] = field(init=False)

    def __post_init__(self) -> None:
        timed = KEYMAP.at(self.release, "native", "sync")
        phases = [e for e in timed if e.within != "step"]  # generation and rewards, inside the batch's preparation
        natives = [e for e in timed if e.within == "step"]
        self._entries = (KEYMAP.at(self.release, "component", "sync"), phases, natives)

    def row(self, wall: float, step: float, step_end: bool, profiled: dict[str, float]) -> int | None:
        """One row: `step` (its train/global_step), whether it logs train/* keys, its profiling timers (seconds, NaN
        where absent); the step it ends, or None."""
        self.pending += [(key, wall - seconds, wall) for key, seconds in profiled.items() if math.isfinite(seconds)]
        if not step_end or not math.isfinite(step) or int(step) in self.timeline.step_bounds:
            return None
        k = int(step)
        first = min((s for _, s, _ in self.pending), default=wall)
        start = self.previous_end if self.previous_end is not None else first
        self.timeline.step_bounds[k] = (start, wall)
        self.previous_end = wall
        _assign(self.timeline, k, self.pending, *self._entries)
        self.pending = []
        return k


def _assign(timeline: Timeline, k: int, spans: list[tuple[str, float, float]], components: list[KeyEntry],
            phases: list[KeyEntry], natives: list[KeyEntry]) -> None:  # fmt: skip
    """Step k's timed blocks: trainer components in painting order, the generation window, the rest as natives.

    A wait lasts until the next timed block begins: in between, the batch is made but TRL is still logging its
    timers (one W&B call each) and entering the loss, with no training work; a colocated trainer idles there too."""
    starts = sorted(s0 for _, s0, _ in spans)
    for entry in components:
        for key, s0, s1 in spans:
            if entry.matches(key):
                if entry.canonical == "trainer.wait":
                    s1 = next((s for s in starts if s >= s1), s1)
                timeline.components.setdefault(k, []).append((entry.canonical, s0, s1))
    window = [(s0, s1) for key, s0, s1 in spans if any(e.matches(key) for e in phases)]
    if window:
        timeline.generation[k] = (min(s for s, _ in window), max(e for _, e in window))
    sums = timeline.natives.setdefault(k, {})
    for key, s0, s1 in spans:
        if any(e.matches(key) for e in components):
            continue
        entry = next((e for e in (*phases, *natives) if e.matches(key)), None)
        name = entry.canonical if entry is not None else "native.trl.profiling." + key[len(PROFILING) :]
        sums[name] = sums.get(name, 0.0) + (s1 - s0)


def paint(t0: float, t1: float, spans: list[tuple[str, float, float]], base: str) -> list[tuple[str, float, float]]:
    """[t0, t1] as contiguous (key, start, end) pieces: `base` where no span lies, else the last span painted there."""
    cuts = sorted({t0, t1, *(min(max(x, t0), t1) for _, a, b in spans for x in (a, b))})
    pieces: list[tuple[str, float, float]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b <= a:
            continue
        mid = (a + b) / 2
        key = next((k for k, s0, s1 in reversed(spans) if s0 <= mid < s1), base)
        if pieces and pieces[-1][0] == key and pieces[-1][2] == a:
            pieces[-1] = (key, pieces[-1][1], b)
        else:
            pieces.append((key, a, b))
    return pieces


def _shift(timeline: Timeline) -> None:
    """Epoch seconds -> seconds since the origin."""
    o = timeline.origin
    timeline.step_bounds = {k: (a - o, b - o) for k, (a, b) in timeline.step_bounds.items()}
    timeline.components = {k: [(key, a - o, b - o) for key, a, b in v] for k, v in timeline.components.items()}
    timeline.generation = {k: (a - o, b - o) for k, (a, b) in timeline.generation.items()}
