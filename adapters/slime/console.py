"""Read slime console output (Ray-prefixed logger lines) into typed records; pure, line by line."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchbed.adapters.slime import keymap as M

from benchbed.adapterkit.pyrepr import ReprError, parse_repr_dict
from benchbed.adapterkit.shared import split_ray_line

LINE = M.KEYMAP.lines  # the console lines read here (keymap.toml [lines])
TRAINER_ACTORS: tuple[str, ...] = ("MegatronTrainRayActor", "FSDPTrainRayActor", "TrainRayActor")
ROLLOUT_ACTORS: tuple[str, ...] = ("RolloutManager",)


@dataclass
class MetricLine:
    """One `<kind> <id>: {dict}` line."""

    kind: str
    id: int
    values: dict[str, Any]
    ts: float
    actor: str
    file: str
    line: int
    lineno: int


@dataclass
class TimerLine:
    name: str
    what: str
    ts: float
    elapsed: float
    lineno: int
    pid: str = ""


@dataclass
class SandboxLine:
    """A coding-agent sandbox log line: a failed provision attempt, an abort, or a finished agent run."""

    kind: str  # "provision_failed" | "aborted" | "agent_done"
    ts: float
    instance: str
    lineno: int
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ConsoleLog:
    """Everything benchbed uses from one console file."""

    source: str
    metrics: list[MetricLine] = field(default_factory=list)
    timers: list[TimerLine] = field(default_factory=list)
    sandbox: list[SandboxLine] = field(default_factory=list)
    fully_async: list[tuple[int, float, str]] = field(default_factory=list)
    partial_collected: list[tuple[int, int]] = field(default_factory=list)  # (line number, samples buffered)
    args: dict[str, str] = field(default_factory=dict)
    call_sites: set[tuple[str, int]] = field(default_factory=set)
    first_ts: float | None = None
    job_failed: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    """A metric line whose dict does not parse yet: pasted logs are often hard-wrapped, so following lines with no
    Ray prefix and no logger header are appended (up to _MAX_WRAP lines) until the dict parses."""

    kind: str
    id: int
    body: str
    actor: str
    file: str
    line: int
    ts: float
    lineno: int
    error: str
    wraps: int = 0


_MAX_WRAP = 200


class _Clock:
    """Parse 1-second-resolution logger timestamps (naive local time) to epoch seconds, memoised."""

    def __init__(self) -> None:
        self._cache: dict[str, float] = {}

    def __call__(self, text: str) -> float:
        value = self._cache.get(text)
        if value is None:
            value = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").timestamp()
            self._cache[text] = value
        return value


def strip_prefix(raw: str) -> tuple[str, str, str]:
    """(actor class, pid, message without ANSI colours, Ray prefix and Ray's de-dup suffix); '' when absent."""
    return split_ray_line(raw)


def parse_console(lines: Iterable[str], source: str) -> ConsoleLog:
    """Collect metric dicts, timer lines, sandbox lines and the Megatron argument block from console text."""
    log = ConsoleLog(source=source)
    clock = _Clock()
    in_args = False
    pending: _Pending | None = None
    args_open, logger, job_failed, metric = (LINE[n].match for n in ("args_open", "logger", "job_failed", "metric"))
    for lineno, raw in enumerate(lines, start=1):
        actor, pid, text = strip_prefix(raw)
        if in_args or args_open(text):
            in_args = _read_arg_line(log, text, in_args)
            continue
        m = logger(text)
        if pending is not None:
            if m is None and actor in ("", pending.actor) and pending.wraps < _MAX_WRAP:
                pending = _continue(log, pending, text)
                continue
            _abandon(log, pending)
            pending = None
        if m is None:
            if not log.job_failed and job_failed(text):
                log.job_failed = f"{source}:{lineno}: {text.strip()}"
            elif metric(text.strip()):  # a dict pasted without the logger's `[date time] file.py:N - `
                pending = _read_message(log, actor, pid, "", 0, text.strip(), math.nan, lineno)
            continue
        ts = clock(m.group("ts"))
        if log.first_ts is None or ts < log.first_ts:
            log.first_ts = ts
        file, line, msg = m.group("file"), int(m.group("line")), m.group("msg")
        pending = _read_message(log, actor, pid, file, line, msg, ts, lineno)
    if pending is not None:
        _abandon(log, pending)
    return log


def _continue(log: ConsoleLog, p: _Pending, text: str) -> _Pending | None:
    """Append one wrapped line; emit the metric once the dict parses."""
    p.body += text
    p.wraps += 1
    if not p.body.rstrip().endswith("}"):
        return p
    try:
        values = parse_repr_dict(p.body)
    except ReprError:
        return p
    log.metrics.append(MetricLine(p.kind, p.id, values, p.ts, p.actor, p.file, p.line, p.lineno))
    if p.kind == "perf":
        log.call_sites.add((p.file, p.line))
    return None


def _abandon(log: ConsoleLog, p: _Pending) -> None:
    log.warnings.append(f"{log.source}:{p.lineno}: skipped `{p.kind} {p.id}:` line: {p.error}")


def _read_arg_line(log: ConsoleLog, text: str, in_args: bool) -> bool:
    if not in_args:
        return True
    if LINE["args_close"].match(text):
        return False
    m = LINE["arg_line"].match(text)
    if m:
        log.args.setdefault(m.group("name"), m.group("value").strip())
        return True
    return False


def _read_message(
    log: ConsoleLog, actor: str, pid: str, file: str, line: int, msg: str, ts: float, lineno: int
) -> _Pending | None:
    m = LINE["metric"].match(msg)
    if m:
        try:
            values = parse_repr_dict(m.group("body"))
        except ReprError as exc:
            return _Pending(
                m.group("kind"), int(m.group("id")), m.group("body"), actor, file, line, ts, lineno, str(exc)
            )
        log.metrics.append(MetricLine(m.group("kind"), int(m.group("id")), values, ts, actor, file, line, lineno))
        if m.group("kind") == "perf":
            log.call_sites.add((file, line))
        return None
    m = LINE["timer"].match(msg)
    if m:
        elapsed = float(m.group("elapsed")) if m.group("elapsed") else float("nan")
        log.timers.append(TimerLine(m.group("name"), m.group("what"), ts, elapsed, lineno, pid))
        return None
    m = LINE["fully_async"].match(msg)
    if m:
        log.fully_async.append((int(m.group("id")), ts, m.group("rest")))
        return None
    m = LINE["partial"].match(msg)
    if m:
        log.partial_collected.append((lineno, int(m.group("n"))))
        return None
    if "[coding_agent_rl]" in msg:
        _read_sandbox(log, msg, ts, lineno)
    return None


def _read_sandbox(log: ConsoleLog, msg: str, ts: float, lineno: int) -> None:
    m = LINE["provision"].search(msg)
    if m:
        detail = {
            "attempt": int(m.group("n")),
            "max_attempts": int(m.group("m")),
            "error_type": m.group("etype"),
            "message": m.group("emsg"),
        }
        log.sandbox.append(SandboxLine("provision_failed", ts, m.group("iid"), lineno, detail))
        return
    m = LINE["aborted"].search(msg)
    if m:
        log.sandbox.append(SandboxLine("aborted", ts, m.group("iid"), lineno, {"reason": m.group("reason").strip()}))
        return
    m = LINE["agent_done"].search(msg)
    if m:
        log.sandbox.append(SandboxLine("agent_done", ts, m.group("iid"), lineno, {"reward": float(m.group("reward"))}))


def is_trainer_perf(metric: MetricLine) -> bool | None:
    """Which process printed a `perf N:` dict: True trainer, False RolloutManager, None unknown.

    Keys decide first (the two dicts share no timer keys), then the Ray actor prefix, then the file name."""
    keys = metric.values
    if any(k in keys for k in M.TRAINER_PERF_MARKERS):
        return True
    if any(k in keys for k in M.ROLLOUT_PERF_MARKERS):
        return False
    if metric.actor in TRAINER_ACTORS:
        return True
    if metric.actor in ROLLOUT_ACTORS:
        return False
    if metric.file == "train_metric_utils.py":
        return True
    if metric.file in ("rollout.py", "rollout_metrics.py"):
        return False
    return None
