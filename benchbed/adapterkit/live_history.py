"""A live reader for any adapter whose runs are tracker histories (W&B `.wandb`, TensorBoard event files, an MLflow
file store) or console logs of its console.toml format: the format's follower (live_wandb, live_tensorboard,
live_mlflow, live_console) reads only what was appended since the last update and hands back whole rows; each batch
of rows goes through the adapter's own history parser (the parse the finished run gets) and its steps feed the live
figures, as JsonlStepsReader does for JSONL. GPU samples of the history (W&B and MLflow system metrics) feed the
GPU-busy figure. A location picks its follower by what it holds (histories.history_kind)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchbed.adapterkit.gpu import match_gpu_key
from benchbed.adapterkit.histories.history import PART, STEP, WALL_TIME, History, HistoryError
from benchbed.adapterkit.live_rows import Follower, Row
from benchbed.errors import BenchbedError, NotThisFrameworkError
from benchbed.trace import Trace
from benchbed.watch.live import LiveFigures


@dataclass
class HistoryStepsReader:
    """Follows one history; `locate()` finds its follower (looked for again at each update until the history's
    files appear), `parse(history)` is the adapter's history parser."""

    run_dir: Path
    figures: LiveFigures
    locate: Callable[[], Follower | None]
    parse: Callable[[History], Trace]
    framework: str
    follower: Follower | None = None
    _gpu: list[tuple[float, float]] = field(default_factory=list)  # (wall time, utilization) not yet credited
    _rows: int = 0  # rows read so far

    @property
    def warnings(self) -> list[str]:
        return self.follower.warnings if self.follower is not None else []

    @property
    def resets(self) -> int:
        return self.follower.resets if self.follower is not None else 0

    def update(self, now: float) -> int:
        """Read what was appended since the last update; the number of new rows. Once the run has ended (its
        tracker says so, or benchbed's record of a run it launched), the rows held back are read too. A history
        that cannot be followed further (a damaged `.wandb` file) ends the watch with HistoryError (see
        `_stop_if_damaged`)."""
        from benchbed.adapterkit.live_jsonl import feed_steps, finished

        done = finished(Path(self.run_dir))
        if self.follower is None:
            self.follower = self.locate()
            if self.follower is None:
                self.figures.ended = self.figures.ended or done
                return 0
        new = self.follower.read()
        if new.ended or done:
            held = self.follower.flush()
            new.rows += held.rows
            new.parts += held.parts
            new.ended = True
        self._gpu.extend(utilization(new.samples))
        if new.rows:
            logged: dict[int, float] = {}
            for step, wall, _ in new.rows:
                logged[step] = max(logged.get(step, -math.inf), math.inf if wall is None else wall)
            frame = rows_frame(new.rows, new.parts)
            history = History(self.follower.source, frame, config=dict(self.follower.config))
            try:
                trace = self.parse(history)
            except NotThisFrameworkError:  # rows without the framework's figures (a validation-only step): no steps
                trace = None
            except BenchbedError as exc:  # the parser refuses these rows alone; ingest reads the whole history
                self.follower.warnings.append(f"{self.follower.source.uri}: rows not shown live: {exc}")
                trace = None
            if trace is not None:
                feed_steps(trace, self.figures, now, lambda step: self._credit(logged.get(step, math.inf)))
        if new.ended:  # samples after the last step belong to no step (gpu.steps_at): the sliding window only
            self._credit(math.inf)
        self.figures.ended = self.figures.ended or new.ended
        self._rows += len(new.rows)
        self._stop_if_damaged(done)
        return len(new.rows)

    def _stop_if_damaged(self, done: bool) -> None:
        """HistoryError naming the damage once the history cannot be followed further and nothing is left to wait
        for: at once when nothing of it was read, else when the run is over (benchbed's record of a run it launched
        says so; a run without one has nothing else to end it)."""
        from benchbed.adapterkit.live_jsonl import RECORD_FILENAME

        damage = self.follower.damage if self.follower is not None else None
        launched = (Path(self.run_dir) / RECORD_FILENAME).is_file()
        if damage is not None and (self._rows == 0 or done or not launched):
            raise HistoryError(damage)

    def _credit(self, until: float) -> None:
        """The GPU samples taken up to `until` (a step's log time), to the step about to close: a sample belongs to
        the first step logged at or after it, as the gpu metrics assign it (adapterkit.gpu.steps_at)."""
        self._gpu.sort()
        taken = bisect.bisect_right(self._gpu, (until, math.inf))
        for _, value in self._gpu[:taken]:
            self.figures.gpu_sample(value)
        del self._gpu[:taken]

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()


def rows_frame(rows: list[Row], parts: list[str]) -> pd.DataFrame:
    """The history frame of a few rows (what `frame_from_rows` gives, keys in first-seen order), built as one matrix:
    a handful of rows with many keys would otherwise cost a pandas column each."""
    keys: dict[str, int] = {}
    for _, _, values in rows:
        for key in values:
            keys.setdefault(key, len(keys))
    matrix = np.full((len(rows), len(keys)), np.nan)
    for i, (_, _, values) in enumerate(rows):
        for key, value in values.items():
            matrix[i, keys[key]] = value
    head = {STEP: np.array([r[0] for r in rows], dtype=np.int64),
            WALL_TIME: np.array([math.nan if r[1] is None else r[1] for r in rows], dtype=float)}  # fmt: skip
    if parts:
        head[PART] = parts
    return pd.concat([pd.DataFrame(head), pd.DataFrame(matrix, columns=list(keys))], axis=1)


def utilization(samples: tuple[list[float], list[str], list[float]]) -> list[tuple[float, float]]:
    """(wall time, ratio) of the utilization samples among a history's GPU samples (gpu_keys.toml's scale)."""
    out = []
    for wall, key, value in zip(*samples, strict=True):
        matched = match_gpu_key(key)
        if matched is not None and matched[0].canonical == "gpu.utilization" and math.isfinite(value):
            out.append((wall, value * matched[0].scale))
    return out


def follower_for(location: Path, kinds: tuple[str, ...] = ("wandb", "tensorboard", "mlflow")) -> Follower | None:
    """The follower of the history at `location` (a W&B run directory or `.wandb` file, TensorBoard event files, an
    MLflow file store or run folder) when its kind is one of `kinds` (those the adapter reads as histories), or
    None."""
    from benchbed.adapterkit.histories.locate import MLFLOW, TENSORBOARD, WANDB, history_kind

    kind = history_kind(location)
    if kind not in kinds:
        return None
    if kind == WANDB:
        from benchbed.adapterkit.live_wandb import WandbFollower

        return WandbFollower(location)
    if kind == TENSORBOARD:
        from benchbed.adapterkit.live_tensorboard import TensorboardFollower

        return TensorboardFollower(location)
    if kind == MLFLOW and Path(location).is_dir():
        from benchbed.adapterkit.live_mlflow import MlflowFollower

        return MlflowFollower(location)
    return None


def follower_inside(run_dir: Path, kinds: tuple[str, ...]) -> Follower | None:
    """The follower of a history benchbed's run directory holds: `wandb/` (its latest run), `mlruns/`, or the first
    folder (two levels down at most) holding TensorBoard event files."""
    from benchbed.adapterkit.histories.tensorboard import EVENT_FILE
    from benchbed.adapterkit.histories.wandb_file import run_dirs_under

    runs = run_dirs_under(run_dir / "wandb") if (run_dir / "wandb").is_dir() else []
    if runs:
        return follower_for(runs[-1], kinds)
    if (run_dir / "mlruns").is_dir():
        return follower_for(run_dir / "mlruns", kinds)
    events = sorted([*run_dir.glob(f"*/{EVENT_FILE}*"), *run_dir.glob(f"*/*/{EVENT_FILE}*")])
    return follower_for(events[0].parent, kinds) if events else None


def history_or_own(name: str, kinds: tuple[str, ...], parse: Callable[[History], Trace], own: Callable[..., Any] | None,
                   run_dir: Path, figures: LiveFigures) -> Any:  # fmt: skip
    """The live reader of `run_dir` for the adapter `name`, which reads the history `kinds` through `parse`: the
    history follower when `run_dir` is such a history, else the adapter's own `watcher` where it declares one, else
    the follower of the history the directory holds (looked for at each update until it appears)."""
    run_dir = Path(run_dir)
    follower = (follower_for(run_dir, kinds) or console_follower(run_dir, name)) if run_dir.exists() else None
    if follower is not None:
        return HistoryStepsReader(run_dir, figures, lambda: follower, parse, name)
    if own is not None:
        return own(run_dir, figures)

    def locate() -> Follower | None:
        return follower_for(run_dir, kinds) or follower_inside(run_dir, kinds) or console_follower(run_dir, name)

    return HistoryStepsReader(run_dir, figures, locate, parse, name)


def console_follower(location: Path, framework: str) -> Follower | None:
    """The follower of `framework`'s console log at `location` (the log itself, or one directly in the folder) when
    its console format (console.toml) recognises it; None otherwise."""
    from benchbed.adapterkit.histories.console_formats import format_of
    from benchbed.adapterkit.live_console import ConsoleFollower

    fmt = format_of(framework)
    if fmt is None:
        return None
    logs = [location] if location.is_file() else sorted(p for p in location.glob("*.log") if p.is_file())
    found = next((log for log in logs if fmt.recognises(log)), None)
    return ConsoleFollower(found, fmt) if found is not None else None
