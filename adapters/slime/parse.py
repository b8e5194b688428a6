"""parse(path): a log file, a TensorBoard directory, a dump directory or a run directory holding any of them."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.adapters.slime.collect import (
    Collected,
    add_dumps,
    add_handoff,
    add_tensorboard,
    fill_from_timers,
    read_console_file,
)
from benchbed.adapters.slime.detect import detect_mode
from benchbed.adapters.slime.discover import DUMPS, EVENTS, LOGS, find_artifacts
from benchbed.adapters.slime.emit import build_trace
from benchbed.adapters.slime.render import PREPARE_SUBDIR

from benchbed.adapterkit.failure import last_error
from benchbed.adapterkit.lines import head_bytes
from benchbed.api import AdapterError, NotThisFrameworkError, RunFailedError, Trace

# Shapes of other frameworks' output, to say what a non-slime input probably is.
_OTHER_FRAMEWORKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"step:\d+ - \S+:"), "verl (`step:N - key:value` lines)"),
    (re.compile(r"timing_s/|perf/throughput|actor/pg_loss"), "verl (timing_s/* or actor/* metrics)"),
    (re.compile(r"prime.rl|orchestrator|\"step\": ?\d+.*\"progress/"), "prime-rl (orchestrator/metrics.jsonl)"),
)


def parse_path(path: Path) -> Trace:
    if not path.exists():
        raise AdapterError(
            f"{path}: no such file or directory; give a slime log file, TensorBoard directory, rollout "
            "dump directory or run directory"
        )
    found = find_artifacts(path)
    # A trainer-only run's rollout-only phase logs are not the measured run (its dumps are the replayed data).
    logs = [p for p in found.of(LOGS) if PREPARE_SUBDIR not in p.parts]
    events = [p for p in found.of(EVENTS) if PREPARE_SUBDIR not in p.parts]
    if not (logs or events or found.of(DUMPS)):
        raise NotThisFrameworkError(
            f"not a slime run: {path} holds no console log (*.log, *.txt, *.out, *.err), "
            "TensorBoard event file or rollout_<id>.pt dump"
        )
    c = Collected()
    c.warnings.extend(found.warnings)
    if found.handoff is not None:
        add_handoff(c, found.handoff.argv, str(found.handoff_path))
    for log in logs:
        read_console_file(c, log)
    add_tensorboard(c, events)
    add_dumps(c, found.of(DUMPS))
    fill_from_timers(c)
    unread = [w for w in c.warnings if "found but not read" in w]  # the optional extra that reads them is missing
    if unread and not _looks_like_slime(c):
        raise AdapterError(unread[0])
    if not _looks_like_slime(c):
        failure = failed_start(logs)
        if failure is not None:
            raise failure
        raise NotThisFrameworkError(f"not a slime run: {_why_not(path, logs, events)}")
    return build_trace(c, detect_mode(c)).validate()


def failed_start(logs: list[Path]) -> RunFailedError | None:
    """The error a slime run without a step died on: a log's last traceback, when slime wrote the log (slime
    modules in the traceback, or Megatron's arguments block with slime's own arguments)."""
    for log in logs:
        error = last_error(log)
        if error is not None and (_SLIME_FRAME.search(error.tail) or _SLIME_ARGS.search(head_bytes(log))):
            return RunFailedError(
                f"{log}:{error.line}: the slime run failed before its first step: {error.message}",
                framework="slime",
                error=error.message,
                log_tail=error.tail,
            )
    return None


_SLIME_FRAME = re.compile(r"[/\\]slime[/\\](?:ray|backends|rollout|utils|observability)[/\\]")
_SLIME_ARGS = re.compile(rb"\n\s+rollout_function_path \.+ ")


def _looks_like_slime(c: Collected) -> bool:
    return bool(c.trainer_perf or c.rollout_perf or c.dumps or c.fully_async_ids or c.sandbox or c.timers)


def _why_not(path: Path, logs: list[Path], events: list[Path]) -> str:
    parts = []
    if logs:
        hint = _guess_other(logs)
        parts.append(
            f"{len(logs)} log file(s) under {path} contain no slime `perf N: {{...}}`, `Timer ... end` "
            "or `fully-async rollout` lines" + (f"; they look like {hint}" if hint else "")
        )
    if events:
        parts.append(
            f"{len(events)} TensorBoard event file(s) carry no slime perf/train_wait_time or perf/rollout_time scalars"
        )
    return "; ".join(parts) or f"nothing slime wrote was found under {path}"


def _guess_other(logs: list[Path]) -> str:
    for log in logs[:5]:
        head = head_bytes(log).decode("utf-8", errors="replace")
        for pattern, name in _OTHER_FRAMEWORKS:
            if pattern.search(head):
                return name
    return ""
