"""`benchbed watch` of a TRL run benchbed launched: the rows the script sends to W&B (launch.ROWS_FILE, written as
they are logged; W&B's own offline log reaches the disk only at the end), the batch log and the sandbox events, read
as they grow. The rows are cut into steps by the same StepCutter that parse.py runs over the W&B history, and the
batches give the samples as emit.py counts them, so the live figures are the ones the finished run's metrics give.
A run of TRL's asynchronous GRPO (the plan's mode "async") has its steps from its logged `perf/*` figures instead,
summed as parse.parse_async sums them."""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from benchbed.adapters.trl.discover import STATE_FILE
from benchbed.adapters.trl.emit import total_rewards
from benchbed.adapters.trl.launch import ARGS_FILE, BATCHES_FILE, ROWS_FILE
from benchbed.adapters.trl.rewards import SANDBOX_LOG_ROLE
from benchbed.adapters.trl.schedule import Schedule
from benchbed.adapters.trl.timeline import GLOBAL_STEP, KEYMAP, PROFILING, StepCutter, Timeline, paint

from benchbed.adapterkit.groups import reward_std
from benchbed.adapterkit.handoff import read_handoff
from benchbed.adapterkit.shared import Ev, FileTail, LiveFigures
from benchbed.api import keys as K
from benchbed.engine.eventlog import EVENTS_DIRNAME

ZERO_STD = 1e-12  # a group whose rewards' spread is below this has no advantage (metrics.samples)


@dataclass
class TrlReader:
    """Follows a TRL run directory: a step when its train/* row is logged, with its wait (the batch's preparation,
    painted as timeline.py paints it), its trained samples and their staleness (v_train − v_start from the
    schedule), its batch's groups and rollouts, and the sandbox starts before its end. `run_end` in the rows ends it."""

    run_dir: Path
    figures: LiveFigures
    framework: str = "trl"
    warnings: list[str] = field(default_factory=list)
    _rows: FileTail = field(init=False)
    _batches: FileTail = field(init=False)
    _sandboxes: FileTail = field(init=False)
    _cutter: StepCutter = field(init=False)
    _global_step: float = 0.0  # the latest train/global_step logged, which W&B stamps on rows without one
    _schedule: Schedule | None = None
    _header: dict[str, Any] = field(default_factory=dict)
    _max_tokens: int | None = None
    _group_size: int = 1
    _queued: deque[dict[str, Any]] = field(default_factory=deque)  # batches read, their step not yet ended
    _generated: int = 0  # batches credited so far (the next one's index)
    _trained: dict[int, list[float]] = field(default_factory=dict)  # v_train -> staleness of the samples it trains
    _starts: list[tuple[float, bool]] = field(default_factory=list)  # sandbox starts not yet credited: (t, ready)
    _async: bool | None = None  # TRL's asynchronous GRPO (the plan's mode), known at the first row
    _async_seen: set[int] = field(default_factory=set)
    _async_keys: dict[str, str] = field(default_factory=dict)  # native -> canonical, roles step, component, counter

    def __post_init__(self) -> None:
        run_dir = Path(self.run_dir)
        self._rows = FileTail(run_dir / ROWS_FILE)
        self._batches = FileTail(run_dir / BATCHES_FILE)
        self._sandboxes = FileTail(run_dir / EVENTS_DIRNAME / f"{SANDBOX_LOG_ROLE}.jsonl")
        self._cutter = StepCutter(Timeline(origin=0.0), KEYMAP.nearest("")[0])  # the release parse.py cuts with

    def update(self, now: float) -> int:
        """Read what was appended since the last update; the number of new lines. The rows are read first: a batch
        or sandbox start logged before a step's row is then read in the same update, whatever the timing."""
        rows = self._rows.read()
        batches, starts = self._batches.read(), self._sandboxes.read()
        for line in batches:
            self._handle(BATCHES_FILE, line, self._batch_line)
        for line in starts:
            self._handle(f"{EVENTS_DIRNAME}/{SANDBOX_LOG_ROLE}.jsonl", line, self._start)
        ended = False
        for line in rows:
            ended = self._handle(ROWS_FILE, line, lambda row: self._row(row, now)) or ended
        if ended or (not self._rows.path.exists() and self._trained_to_the_end()):
            self._credit_starts(math.inf)
            self.figures.ended = True
        return len(rows) + len(batches) + len(starts)

    def _trained_to_the_end(self) -> bool:
        """Without the rows file (a TRL script benchbed did not render, or an older render), the run has ended when
        trainer_state.json logs TRL's end-of-training summary (parse.Run.finished); its steps show only then."""
        try:
            state = json.loads((Path(self.run_dir) / STATE_FILE).read_text())
        except (OSError, ValueError):
            return False
        history = state.get("log_history") if isinstance(state, dict) else None
        if not isinstance(history, list) or not any(isinstance(e, dict) and "train_runtime" in e for e in history):
            return False
        self.warnings.append(f"{self.run_dir}: no {ROWS_FILE} (written by the scripts benchbed renders): no live "
                             f"steps; the figures are the finished run's")  # fmt: skip
        return True

    def _handle(self, name: str, line: str, handler: Callable[[dict[str, Any]], None]) -> bool:
        """One line of `name` to its handler; whether it is the rows' `run_end`. A line that is not what the script
        writes is a warning (the final parse names what it cannot read)."""
        if not line.strip():
            return False
        try:
            value = json.loads(line)
            if isinstance(value, dict) and "run_end" in value:
                return True
            if isinstance(value, dict):
                handler(value)
        except json.JSONDecodeError:
            self.warnings.append(f"{name}: a line that is not JSON (the final parse names it)")
        except (KeyError, TypeError, ValueError, OSError) as exc:
            self.warnings.append(f"{name}: a line without what the script writes there ({type(exc).__name__}: {exc})")
        return False

    def _start(self, event: dict[str, Any]) -> None:
        if event.get("ev") == "sandbox" and event.get("step") in (Ev.READY, Ev.FAILED):
            self._starts.append((float(event["t"]), event["step"] == Ev.READY))

    def _batch_line(self, entry: dict[str, Any]) -> None:
        if entry.get("format") == "benchbed-trl-batches":  # the header, written once TRL's arguments are saved
            self._header = entry
            args = json.loads((Path(self.run_dir) / ARGS_FILE).read_text())
            self._schedule = Schedule(per_device_batch=int(args["per_device_train_batch_size"]),
                                      steps_per_generation=int(args.get("steps_per_generation") or
                                                               args.get("gradient_accumulation_steps", 1)),
                                      num_iterations=int(args.get("num_iterations", 1)),
                                      grad_accum=int(args.get("gradient_accumulation_steps", 1)))  # fmt: skip
            self._max_tokens = args.get("max_completion_length")
            self._group_size = int(args["num_generations"])
            self.figures.concurrency = self._schedule.generation_batch  # the trace's meta.concurrency
            steps = args.get("max_steps")
            self.figures.total_steps = steps if isinstance(steps, int) and steps > 0 else None
        elif "permutation" in entry:
            self._queued.append(entry)

    def _row(self, row: dict[str, Any], now: float) -> None:
        step = row.get(GLOBAL_STEP)
        if isinstance(step, int | float):
            self._global_step = float(step)
        step_end = any(k.startswith("train/") and k != GLOBAL_STEP for k in row)
        if self._async is None:  # the plan benchbed wrote before launching says which trainer runs
            handoff = read_handoff(Path(self.run_dir), self.warnings)
            self._async = handoff is not None and handoff.mode == "async"
        if self._async:
            if step_end:
                self._async_step(row, now)
            return
        profiled = {k: float(v) for k, v in row.items() if k.startswith(PROFILING)}
        k = self._cutter.row(float(row["_timestamp"]), self._global_step, step_end, profiled)
        if k is not None:
            self._step(k, now)

    def _async_step(self, row: dict[str, Any], now: float) -> None:
        """A step of TRL's asynchronous GRPO: its `perf/*` and `batch/*` figures (logged as `train/<key>`), summed
        per canonical key as parse.parse_async sums them; a step without `perf/step_s` (the first) has no time."""
        k = int(self._global_step)
        if k in self._async_seen:
            return
        self._async_seen.add(k)
        if not self._async_keys:
            release, _ = KEYMAP.nearest(self._header.get("versions", {}).get("trl", ""))
            for role in ("step", "component", "counter"):
                self._async_keys.update({n: c for n, c in KEYMAP.mapping(release, role, "async").items()
                                         if n not in self._async_keys})  # fmt: skip
        summed: dict[str, float] = {}
        for key, value in row.items():
            canonical = self._async_keys.get(key.removeprefix("train/")) if key.startswith("train/") else None
            if canonical is not None:
                summed[canonical] = summed.get(canonical, 0.0) + float(value)
        if K.TRAINER_STEP in summed:
            self.figures.step(k, summed[K.TRAINER_STEP], summed.get(K.TRAINER_WAIT, 0.0),
                              int(summed.get(K.SAMPLES_TRAINED, 0)), now)  # fmt: skip

    def _step(self, k: int, now: float) -> None:
        """Step k ended: credit its batches (logged at global_step k − 1 or before) and sandbox starts, then it."""
        timeline = self._cutter.timeline
        t0, t1 = timeline.step_bounds[k]
        while self._queued and self._queued[0].get("global_step", 0) < k:
            self._batch(self._queued.popleft(), timeline.generation)
        self._credit_starts(t1)
        pieces = paint(t0, t1, timeline.components.get(k, []), K.TRAINER_COMPUTE)
        wait = sum(b - a for key, a, b in pieces if key == K.TRAINER_WAIT)
        staleness = self._trained.pop(k - 1, [])
        self.figures.staleness(staleness)
        self.figures.step(k, t1 - t0, wait, len(staleness), now, (t0, t1))

    def _batch(self, entry: dict[str, Any], generation: dict[int, tuple[float, float]]) -> None:
        """Batch g's groups, rollouts (each running over the batch's generation window) and trained samples, as
        emit.emit_samples has them; a batch whose record is not the schedule's size is left out there too."""
        g, schedule = self._generated, self._schedule
        self._generated += 1
        if schedule is None:
            return
        n, size = schedule.generation_batch, self._group_size
        rewards = entry.get("rewards") or {}
        if not rewards or any(len(values) != n for values in rewards.values()):
            return
        table = pd.DataFrame({name: [math.nan if r is None else r for r in values] for name, values in rewards.items()})
        totals = total_rewards(table, self._header.get("reward_funcs", []), self._header.get("reward_weights"))
        for p in range(n // size):
            self.figures.group(abs(reward_std(totals[p * size : (p + 1) * size])) < ZERO_STD)
        window = generation.get(schedule.generated_in_step(g))
        tokens = entry.get("completion_tokens", [])
        for i in range(n):
            if window is not None:
                self.figures.busy.span(*window)
            limit = self._max_tokens
            self.figures.rollout(bool(limit) and len(tokens) == n and tokens[i] >= limit)
        v_start = schedule.version_at(schedule.generation_micro_step(g))
        for slice_ in range(schedule.steps_per_generation):
            v_train = schedule.uses(g, slice_)[0]
            self._trained.setdefault(v_train, []).extend([float(v_train - v_start)] * schedule.per_device_batch)

    def _credit_starts(self, until: float) -> None:
        for t, ready in sorted(self._starts):
            if t <= until:
                self.figures.sandbox_start(ready)
        self._starts = [(t, ready) for t, ready in self._starts if t > until]

    @property
    def resets(self) -> int:
        """Truncations and rotations of the followed files seen so far."""
        return self._rows.resets + self._batches.resets + self._sandboxes.resets

    def close(self) -> None:
        """Release the followed files."""
        for tail in (self._rows, self._batches, self._sandboxes):
            tail.close()
