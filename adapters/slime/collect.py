"""Gather what a slime run left behind (console logs, TensorBoard events, rollout dumps) into one neutral view."""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from benchbed.adapters.slime import keymap as M
from benchbed.adapters.slime.console import ConsoleLog, SandboxLine, TimerLine, is_trainer_perf, parse_console
from benchbed.adapters.slime.dumps import Dump, TorchUnavailable, load_dump
from benchbed.adapters.slime.runargs import RunArgs, from_argv, from_megatron_block
from benchbed.adapters.slime.tensorboard import split_axes
from benchbed.adapters.slime.timers import perf_from_timers
from benchbed.adapters.slime.trainer import Perf

from benchbed.adapterkit.histories.tensorboard import TensorboardUnavailable, scalar_dicts

T = TypeVar("T")


@dataclass
class Collected:
    """Per-rollout-id dicts from every source, joined on rollout id (never on time)."""

    trainer_perf: dict[int, Perf] = field(default_factory=dict)
    rollout_perf: dict[int, Perf] = field(default_factory=dict)
    trainer_rollout: dict[int, dict[str, float]] = field(default_factory=dict)
    # (kind, rollout id) -> figures: eval / passrate / multi_turn / partial_rollout dicts, fully_async and
    # partial-sample log lines
    other_dicts: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)
    job_failed: list[str] = field(default_factory=list)
    epoch_rollout_times: dict[int, float] = field(default_factory=dict)  # rollout id -> TensorBoard wall time
    train_steps: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    timers: list[TimerLine] = field(default_factory=list)
    sandbox: list[SandboxLine] = field(default_factory=list)
    fully_async_ids: set[int] = field(default_factory=set)
    call_sites: set[tuple[str, int]] = field(default_factory=set)
    dumps: list[Dump] = field(default_factory=list)
    args: RunArgs = field(default_factory=RunArgs)
    first_ts: float = math.inf
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: bool = False

    def saw(self, ts: float) -> None:
        if math.isfinite(ts):
            self.first_ts = min(self.first_ts, ts)


def add_console(c: Collected, log: ConsoleLog) -> None:
    """Fold one console file in; `step N` dicts attach to the next trainer `perf` line (they are logged before it)."""
    c.sources.append(log.source)
    c.warnings.extend(log.warnings)
    c.timers.extend(log.timers)
    c.sandbox.extend(log.sandbox)
    c.call_sites |= log.call_sites
    c.fully_async_ids |= {rid for rid, _, _ in log.fully_async}
    for rid, _, rest in log.fully_async:
        figures = {f"fully_async/{k}": float(v) for k, v in _FULLY_ASYNC_FIGURES.findall(rest)}
        if done := _FULLY_ASYNC_DONE.search(rest):
            figures["fully_async/done_s"] = float(done.group(1))
        c.other_dicts.setdefault(("fully_async", rid), {}).update(figures)
    if log.job_failed:
        c.job_failed.append(log.job_failed)
    _attach_partial_counts(c, log)
    if log.first_ts is not None:
        c.saw(log.first_ts)
    if log.args:
        c.args = c.args.merge(from_megatron_block(log.args, f"{log.source} (Megatron arguments block)"))
    pending: list[dict[str, float]] = []
    duplicates = 0
    for m in log.metrics:
        origin = f"{log.source}:{m.lineno}"
        if m.kind == "step":
            pending.append(_numeric(m.values))
        elif m.kind == "perf":
            side = is_trainer_perf(m)
            if side is None:
                c.warnings.append(f"{origin}: `perf {m.id}` dict is neither trainer's nor rollout manager's; skipped")
                continue
            target = c.trainer_perf if side else c.rollout_perf
            duplicates += m.id in target
            target[m.id] = Perf(m.values, m.ts, origin)
            if side:
                c.train_steps[m.id] = pending
                pending = []
        elif m.kind == "rollout":
            c.trainer_rollout[m.id] = _numeric(m.values)
        elif m.kind == "partial_rollout":
            c.other_dicts[(m.kind, m.id)] = partial_rollout_figures(m.values, origin, c.warnings)
        elif m.kind in ("eval", "passrate", "multi_turn"):
            c.other_dicts[(m.kind, m.id)] = _numeric(m.values)
    if duplicates:
        c.warnings.append(
            f"{log.source}: {duplicates} `perf` dict(s) repeat an earlier rollout id; the last one is kept"
        )


# `target=8 queue_warm=3`, `done in 41.2s, queue_left=5` (slime/rollout/fully_async_rollout.py)
_FULLY_ASYNC_FIGURES = re.compile(r"\b(target|queue_warm|queue_left)=(\d+)")
_FULLY_ASYNC_DONE = re.compile(r"\bdone in ([\d.]+)s")


def _attach_partial_counts(c: Collected, log: ConsoleLog) -> None:
    """`Collected N partial samples into the data buffer` is logged while rollout k ends, before `perf k`: the count
    of partially generated samples buffered for resumption goes to the next rollout-manager perf line."""
    perf_lines = sorted((m.lineno, m.id) for m in log.metrics if m.kind == "perf" and is_trainer_perf(m) is False)
    for lineno, count in log.partial_collected:
        i = bisect.bisect_right(perf_lines, (lineno, math.inf))
        if i < len(perf_lines):
            figures = c.other_dicts.setdefault(("partial", perf_lines[i][1]), {})
            figures["partial_rollout/buffered"] = figures.get("partial_rollout/buffered", 0.0) + count


def add_tensorboard(c: Collected, files: list[Path]) -> None:
    """Fold event files in: per file and step, trainer vs rollout-manager scalars are told apart by their keys.

    Console dicts, when present, win: their times are on the console's clock (naive local time), TensorBoard's on
    the epoch, so one side of the run is never assembled from both. TensorBoard rollout times are kept to align
    the two clocks (see clock_shift)."""
    trainer: dict[int, Perf] = {}
    rollout: dict[int, Perf] = {}
    stats: dict[int, dict[str, float]] = {}
    # a truncated or foreign event file must not stop the ingest
    for path, (entries, damage) in _read_each(c, files, scalar_dicts, "TensorBoard event file", skip=(Exception,)):
        if damage:
            c.warnings.append(damage)
            c.partial = True
        for entry in entries:
            _, other = split_axes(entry)  # train/* scalars sit on the train/step axis; not joined to rollouts
            entry.step = rollout_id_of(c, entry.step)
            origin = f"{path} (step {entry.step})"
            if any(k in other for k in M.TRAINER_PERF_MARKERS):
                perf = {k: v for k, v in other.items() if k.startswith("perf/")}
                trainer.setdefault(entry.step, Perf(perf, entry.wall_time, origin, "epoch"))
                rollout_stats = {k: v for k, v in other.items() if k.startswith("rollout/")}
                if rollout_stats:
                    stats.setdefault(entry.step, rollout_stats)
            elif any(k in other for k in M.ROLLOUT_PERF_MARKERS):
                rollout.setdefault(entry.step, Perf(other, entry.wall_time, origin, "epoch"))
    c.epoch_rollout_times.update({rid: p.ts for rid, p in rollout.items()})
    console_clock = bool(c.trainer_perf or c.rollout_perf)
    if not c.trainer_perf:
        c.trainer_perf, c.trainer_rollout = trainer, stats or c.trainer_rollout
    if not c.rollout_perf:
        c.rollout_perf = rollout
    if not console_clock:
        for p in [*trainer.values(), *rollout.values()]:
            c.saw(p.ts)


def rollout_id_of(c: Collected, tb_step: int) -> int:
    """slime logs rollout-side scalars at step rollout_id, or, with --wandb-always-use-train-step, at
    rollout_id * rollout_batch_size * n_samples_per_prompt // global_batch_size (metric_utils.compute_rollout_step)."""
    a = c.args
    if not (a.wandb_always_use_train_step and a.rollout_batch_size and a.n_samples_per_prompt and a.global_batch_size):
        return tb_step
    per_rollout = a.rollout_batch_size * a.n_samples_per_prompt // a.global_batch_size
    return tb_step // per_rollout if per_rollout > 0 else tb_step


def add_dumps(c: Collected, files: list[Path]) -> None:
    for path, dump in _read_each(c, files, load_dump, "rollout dump"):
        if dump.unsafe_load:
            c.warnings.append(
                f"{path}: dump holds non-tensor objects and was fully unpickled, as slime itself loads it"
            )
        c.dumps.append(dump)


def _read_each(
    c: Collected, files: list[Path], read: Callable[[Path], T], what: str, skip: tuple[type[Exception], ...] = ()
) -> Iterator[tuple[Path, T]]:
    """(path, what `read` made of it) per file, each file kept as a source. When the optional extra that reads
    them is missing, one warning and nothing; a file whose error is in `skip` is a warning and a partial run."""
    for path in files:
        try:
            value = read(path)
        except (TensorboardUnavailable, TorchUnavailable) as exc:
            c.warnings.append(f"{len(files)} {what}(s) found but not read: {exc}")
            return
        except skip as exc:
            c.warnings.append(f"{path}: unreadable {what} ({type(exc).__name__}: {exc}); skipped")
            c.partial = True
            continue
        c.sources.append(str(path))
        yield path, value


def add_handoff(c: Collected, argv: list[str], source: str) -> None:
    """The arguments of the command benchbed launched (its hand-off file), ahead of what the logs say."""
    c.sources.append(source)
    c.args = from_argv(argv, source).merge(c.args)


def read_console_file(c: Collected, path: Path) -> None:
    with path.open(encoding="utf-8", errors="replace") as fh:
        add_console(c, parse_console(fh, str(path)))


def fill_from_timers(c: Collected) -> None:
    """Without any trainer `perf N:` dict, rebuild the trainer's steps from its `Timer ... end` lines."""
    if c.trainer_perf or not c.timers:
        return
    c.trainer_perf = perf_from_timers(c.timers)
    if c.trainer_perf:
        c.warnings.append(
            "no trainer `perf N:` lines: steps rebuilt from `Timer ... end` lines and numbered from rollout 0 in "
            "log order (Timer lines carry no rollout id)"
        )


def partial_rollout_figures(values: dict[str, object], origin: str, warnings: list[str]) -> dict[str, float]:
    """APRIL's `partial_rollout N:` figures, less a token count or share that is negative or not finite (a warning
    naming where it was logged): one damaged figure leaves the rest of the run."""
    figures = _numeric(values)
    for key in M.PARTIAL_ROLLOUT_KEYS.keys() & figures.keys():
        if not (math.isfinite(figures[key]) and figures[key] >= 0):
            warnings.append(f"{origin}: {key} = {figures.pop(key)} is not a count of tokens or a share; left out")
    return figures


def _numeric(values: dict[str, object]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def clock_shift(c: Collected) -> float:
    """Seconds to add to epoch times (dump traces, TensorBoard) to put them on the console's clock.

    Console timestamps are naive local time of the machine that ran slime; the shift is the time-zone offset,
    estimated from rollouts seen on both clocks and rounded to 15 minutes (0 when there is no console clock)."""
    console = {rid: p.ts for rid, p in c.rollout_perf.items() if p.clock == "console"}
    epoch = dict(c.epoch_rollout_times)
    for dump in c.dumps:
        ends = [float(e["ts"]) for s in dump.samples for e in s.trace_events if isinstance(e.get("ts"), (int, float))]
        if ends:
            epoch.setdefault(dump.rollout_id, max(ends))
    diffs = sorted(console[r] - epoch[r] for r in console.keys() & epoch.keys())
    if not diffs:
        return 0.0
    return 900.0 * round(diffs[len(diffs) // 2] / 900.0)
