"""A verl run that died before its first step: its log ends in a traceback and holds no step line."""

from __future__ import annotations

import re
from pathlib import Path

from benchbed.adapterkit.artifacts import Artifacts, walk
from benchbed.adapterkit.failure import LastError, last_error
from benchbed.adapterkit.lines import head_bytes
from benchbed.api import RunFailedError

_LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
MAX_LOGS = 50  # text files of a run directory searched for the traceback
# What only verl's start-up writes: its modules in a traceback frame or warning, the config it composes and prints,
# its config check, its task runners' Ray actor prefixes.
_VERL_MARK = re.compile(
    rb"[/\\]verl[/\\]|\bverl\.(?:trainer|workers|utils|experimental)\b|'actor_rollout_ref'|\[validate_config\]"
    rb"|\((?:TaskRunner|TaskRunnerV1|OneStepTaskRunner|FullyAsyncTaskRunner|FullyAsyncTrainer) pid="
)


def failed_start(path: Path, found: Artifacts) -> RunFailedError | None:
    """The error a verl run without step lines died on, when its log (`path`, or a text log under the run
    directory) ends in a traceback and verl wrote it (verl marks in the log, or benchbed's plan names verl)."""
    planned = found.handoff is not None and found.handoff.adapter == "verl"
    logs = [path] if path.is_file() else [p for p in walk(path) if p.name.endswith(_LOG_SUFFIXES)][:MAX_LOGS]
    failures: list[tuple[Path, LastError]] = []
    for log in logs:
        error = last_error(log)
        if error is not None and (planned or _written_by_verl(log, error)):
            failures.append((log, error))
    if not failures:
        return None
    log, error = max(failures, key=lambda f: f[0].stat().st_mtime)  # the file written last holds the final error
    return RunFailedError(
        f"{log}:{error.line}: the verl run failed before its first step: {error.message}",
        framework="verl",
        error=error.message,
        log_tail=error.tail,
    )


def _written_by_verl(log: Path, error: LastError) -> bool:
    return bool(_VERL_MARK.search(head_bytes(log)) or _VERL_MARK.search(error.tail.encode()))
