"""prime-rl run directory / metrics.jsonl / console log -> canonical Trace, with the era detected from the files."""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchbed.adapters.prime_rl.console import (
    TRACEBACK,
    ConsoleRead,
    looks_like_console_log,
    read_console_log,
)
from benchbed.adapters.prime_rl.discover import (
    METRICS_FILE,
    ORCHESTRATOR_LOGS,
    TRAINER_LOGS,
    log_dir,
    resolve_run_dir,
)
from benchbed.adapters.prime_rl.emit import (
    Shape,
    emit_episodes,
    emit_orchestrator,
    emit_pauses,
    emit_trainer,
    time_origin,
)
from benchbed.adapters.prime_rl.envlog import read_env_log
from benchbed.adapters.prime_rl.episodes import read_episode_files, step_dirs
from benchbed.adapters.prime_rl.keymap import HEAD_MARKERS, LEGACY_MARKERS
from benchbed.adapters.prime_rl.metrics_file import read_metrics_file
from benchbed.adapters.prime_rl.model import RunData

from benchbed.adapterkit.failure import last_error
from benchbed.adapterkit.handoff import read_handoff
from benchbed.adapterkit.lines import first_json_object
from benchbed.adapterkit.shared import strip_ansi
from benchbed.api import NotThisFrameworkError, RunFailedError, Trace, TraceBuilder, TraceMeta

ADAPTER = "prime_rl"
FRAMEWORK = "prime-rl"
# Eras (issue 4): name -> framework_version recorded in the trace.
ERAS = {
    "head": "v0.8.1.dev (559b447 era: metrics.jsonl by default, per-step traces.jsonl, max_off_policy_steps)",
    "v0.6-v0.8.0": "v0.6-v0.8.0 (file monitor opt-in; no off_policy/* metrics)",
    "v0.6+": "v0.6 or later (console log only: step lines in the post-v0.5 format)",
    "v0.5-": "<=v0.5 (console logs only, max_async_level)",
    "sft": "SFT trainer (`sft` entrypoint; an SFT run's files do not tell the release)",
}
SFT_MODE = "sft"
ERROR_LINE = re.compile(r"^\d{2}:\d{2}:\d{2}\s+(ERROR|CRITICAL)\s|\"level\": \"(ERROR|CRITICAL)\"", re.M)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while 10^5 records become objects that all stay alive.

    Every allocation batch would otherwise re-traverse everything read so far (parsing 100,000 episodes ran
    ~3x slower with it on); reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_path(path: Path) -> Trace:
    """Read a run directory, a metrics.jsonl, or a console log."""
    with no_cyclic_gc():
        return _parse_path(Path(path))


def _parse_path(path: Path) -> Trace:
    if not path.exists():
        raise NotThisFrameworkError(f"not a prime-rl run: {path} does not exist")
    data = RunData()
    console: list[ConsoleRead] = []
    if path.is_dir():
        _read_run_dir(path, data, console)
    else:
        _read_file(path, data, console)
    return build_trace(data, console)


def _read_file(path: Path, data: RunData, console: list[ConsoleRead]) -> None:
    if path.suffix == ".jsonl" and not _is_json_console(path):
        read_metrics_file(path, data)
        data.config = _read_configs(path.parent, data.warnings) | _read_sft_config(path.parent, data)
        return
    if not looks_like_console_log(path):
        raise NotThisFrameworkError(
            f"not a prime-rl run: {path} is neither a metrics.jsonl nor a prime-rl console log "
            "(no 'HH:mm:ss LEVEL message' loguru lines and no JSON log records)"
        )
    info = read_console_log(path, data)
    if info.recognized:
        console.append(info)
        return
    if read_env_log(path, data):
        return
    failure = failed_start([path])
    if failure is not None:
        raise failure
    raise NotThisFrameworkError(
        f"not a prime-rl run: {path} is a loguru-style log but has no prime-rl step lines "
        "('Step N | ... | Loss' / '| Reward'), no dispatcher lines and no env-server rollout lines"
    )


def _is_json_console(path: Path) -> bool:
    obj = first_json_object(path)
    return obj is not None and "message" in obj and "level" in obj and "timestamp" in obj


def _read_run_dir(run_dir: Path, data: RunData, console: list[ConsoleRead]) -> None:
    run_dir = resolve_run_dir(run_dir)
    data.config = _read_configs(run_dir, data.warnings) | _read_sft_config(run_dir, data)
    logs = log_dir(run_dir)
    metrics = run_dir / METRICS_FILE
    has_rollouts = bool(step_dirs(run_dir))
    if metrics.exists():
        read_metrics_file(metrics, data)
        if logs is not None:
            console += [_scan_crash(logs / n) for n in (*TRAINER_LOGS, *ORCHESTRATOR_LOGS) if (logs / n).is_file()]
    elif logs is not None:
        found = [logs / name for name in (*TRAINER_LOGS, *ORCHESTRATOR_LOGS) if (logs / name).exists()]
        for log in found:
            info = read_console_log(log, data)
            console.append(info)
        if found:
            data.warnings.append(
                f"{run_dir}: no {METRICS_FILE}; fell back to console logs ({', '.join(p.name for p in found)}), "
                "which carry step times but no per-phase timers unless logged at debug level"
            )
    if has_rollouts:
        read_episode_files(run_dir, data)
    elif logs is not None:
        origin = _log_clock_offset(data)
        env_logs = sorted((logs / "envs" / "train").glob("*.log")) if (logs / "envs" / "train").is_dir() else []
        for env_log in env_logs:
            read_env_log(env_log, data, origin)
        if env_logs and data.episodes:
            data.warnings.append(
                f"{run_dir}: no rollouts/step_*/ episode files; episodes and sandbox starts taken from env-server "
                "logs (start latencies paired first-in-first-out, approximate under concurrency)"
            )
    if data.episodes and not (data.trainer or data.orchestrator):
        data.warnings.append(f"{run_dir}: no {METRICS_FILE} and no console logs; trainer timings are unknown")
    if not (data.trainer or data.orchestrator or data.episodes):
        logs_found = [logs / n for n in (*TRAINER_LOGS, *ORCHESTRATOR_LOGS)] if logs is not None else []
        failure = failed_start([p for p in logs_found if p.is_file()], in_run_dir=True)
        if failure is not None:
            raise failure
        raise NotThisFrameworkError(
            f"not a prime-rl run: {run_dir} has no {METRICS_FILE}, no rollouts/step_N/ episode files and no "
            "prime-rl console logs (logs/latest/{trainer,orchestrator}.log)"
        )


def failed_start(logs: list[Path], in_run_dir: bool = False) -> RunFailedError | None:
    """The error a prime-rl run without a step died on: the last traceback of its trainer or orchestrator log,
    when prime-rl wrote the log (its place in a run directory, or prime_rl frames in the traceback)."""
    for log in logs:
        error = last_error(log)
        if error is not None and (in_run_dir or "prime_rl" in error.tail):
            return RunFailedError(
                f"{log}:{error.line}: the prime-rl run failed before its first step: {error.message}",
                framework=FRAMEWORK,
                error=error.message,
                log_tail=error.tail,
            )
    return None


def _scan_crash(log: Path) -> ConsoleRead:
    """Only whether a log shows a crash (a traceback or an ERROR line); metrics.jsonl has the numbers."""
    text = strip_ansi(log.read_text(errors="replace"))
    return ConsoleRead(crashed=TRACEBACK in text or bool(ERROR_LINE.search(text)))


def _log_clock_offset(data: RunData) -> float:
    """Epoch of midnight UTC on the day of the first metrics row, so HH:mm:ss log times line up with epochs."""
    ends = [s.t_end for s in data.trainer.values() if math.isfinite(s.t_end) and s.t_end > 86400 * 10]
    if not ends:
        return 0.0
    day = datetime.fromtimestamp(min(ends), tz=timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return day.timestamp()


def _read_configs(run_dir: Path, warnings: list[str]) -> dict[str, Any]:
    """Settings from the resolved configs prime-rl writes (configs/*.json), else benchbed's hand-off file."""
    orch: dict[str, Any] = {}
    rl: dict[str, Any] = {}
    for name in ("orchestrator.json", "rl.json"):
        path = run_dir / "configs" / name
        if path.exists():
            try:
                doc = json.loads(path.read_text())
            except ValueError:
                continue
            if name == "rl.json":
                rl = doc
                orch = orch or doc.get("orchestrator") or {}
            else:
                orch = doc
    handoff = None if (orch or rl) else read_handoff(run_dir, warnings) or read_handoff(run_dir.parent, warnings)
    if handoff is not None:  # rendered by benchbed, configs not written yet (the run died early)
        orch = {"batch_size": handoff.samples_per_step, "group_size": handoff.group_size}
        orch |= {k: handoff.get(k) for k in ("max_off_policy_steps", "max_steps")}
    return config_settings(orch, rl)


def _read_sft_config(run_dir: Path, data: RunData) -> dict[str, Any]:
    """The `sft` entrypoint's resolved config (configs/sft.json): it marks an SFT run; its data.batch_size is the
    samples per step, data.seq_len and max_steps as in an RL run's configs."""
    path = run_dir / "configs" / "sft.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    data.sft = data.sft or str(path)
    block = doc.get("data") if isinstance(doc, dict) else None
    block = block if isinstance(block, dict) else {}
    out = {"batch_size": block.get("batch_size"), "seq_len": block.get("seq_len"), "max_steps": doc.get("max_steps")}
    return {k: v for k, v in out.items() if isinstance(v, int) and not isinstance(v, bool)}


def config_settings(orch: dict[str, Any], rl: dict[str, Any]) -> dict[str, Any]:
    """The settings the trace uses, from the orchestrator's config and the `rl` launcher's (either may be empty)."""
    out: dict[str, Any] = {}
    for key in (
        "batch_size",
        "group_size",
        "max_off_policy_steps",
        "max_async_level",
        "rollouts_per_example",
        "max_steps",
        "seq_len",
    ):
        if isinstance(orch.get(key), int):
            out[key] = orch[key]
    if isinstance(rl.get("max_steps"), int):
        out.setdefault("max_steps", rl["max_steps"])
    conc = orch.get("concurrency")
    if isinstance(conc, dict) and isinstance(conc.get("max_inflight"), int):
        out["max_inflight"] = conc["max_inflight"]
    return out


def detect_era(data: RunData, console: list[ConsoleRead]) -> str:
    """'head', 'v0.6-v0.8.0', 'v0.6+' (console only) or 'v0.5-' from the markers the files carry."""
    if any(m in data.evidence for m in HEAD_MARKERS) or any(e.v_start >= 0 for e in data.episodes):
        return "head"
    if any(m in data.evidence for m in LEGACY_MARKERS) or any(c.legacy_format for c in console):
        return "v0.5-"
    if "max_async_level" in data.config:
        return "v0.5-"
    if any(c.records for c in console) and "time/wait_for_policy" not in data.evidence:
        return "v0.6+"
    return "v0.6-v0.8.0" if (data.trainer or data.orchestrator) else "head"


def build_trace(data: RunData, console: list[ConsoleRead]) -> Trace:
    """The trace of a prime-rl run; an SFT run (`data.sft`) is a trainer-only run with mode "sft": no orchestrator,
    no rollouts, no wait for batches, so none of the RL warnings apply."""
    sft = data.sft is not None
    era = SFT_MODE if sft else detect_era(data, console)
    steps = [*data.trainer, *data.orchestrator]
    if steps and min(steps) == 0:
        data.step_offset = 1
    partial = _is_partial(data, console)
    if any("truncated last line" in w for w in data.warnings):
        partial = True
    shape = Shape(max_off_policy_steps=data.config.get("max_off_policy_steps"), partial=partial)
    warnings = list(data.warnings)
    if any(c.derived_wait for c in console):
        warnings.append(
            "trainer wait taken from log timestamps between 'Waiting for training batch to arrive' and 'Starting "
            "forward and backward pass' (text logs carry whole seconds, so each wait is +-1 s)"
        )
    no_wait = all(math.isnan(s.wait_s) for s in data.trainer.values())
    if console and data.trainer and no_wait and not any(c.saw_wait for c in console) and not sft:
        warnings.append(
            "console logs have no 'Waited for batch to arrive' lines (logged at log.level=debug only): "
            "the trainer's wait is unknown, so trainer idle cannot be computed from this run"
        )
    _warn_unknown_steps(data, warnings)
    if data.step_offset:
        warnings.append("steps are numbered from 0 in this prime-rl version; they were shifted by +1")
    if era == "v0.5-" or data.step_offset:
        warnings.append(
            "before v0.7 the trainer's time/step excludes the weight broadcast and checkpoint (they ran before "
            "the step timer started), so trainer.step undercounts the step by that much"
        )
    origin = time_origin(data)
    b = TraceBuilder()
    emit_trainer(b, data, warnings, waits=not sft)
    emit_orchestrator(b, data, counters_from_episodes=bool(data.episodes))
    emit_pauses(b, data, origin)
    emit_episodes(b, data, shape, origin, warnings)
    group_size = data.config.get("group_size") or data.config.get("rollouts_per_example")
    extra: dict[str, Any] = {"era": era, "t0_epoch": origin if origin > 86400 * 10 else None, **data.config}
    if sft:
        extra["sft_evidence"] = data.sft
    if data.step_offset:
        extra["step_offset"] = data.step_offset
    meta = TraceMeta(
        adapter=ADAPTER,
        framework=FRAMEWORK,
        framework_version=ERAS[era],
        mode=SFT_MODE if sft else "async (max_async_level)" if era == "v0.5-" else "async (max_off_policy_steps)",
        # Not orchestrator.concurrency.max_inflight: prime-rl adapts in-flight episodes below that cap (AIMD on KV
        # usage), so dividing by it would understate utilization; the cap stays in extra["max_inflight"].
        concurrency=None,
        samples_per_step=data.config.get("batch_size"),
        group_size=group_size,
        sources=data.sources,
        warnings=warnings,
        partial=partial,
        extra=extra,
    )
    return b.build(meta)


def _is_partial(data: RunData, console: list[ConsoleRead]) -> bool:
    """A crashed or cut-short run: a traceback in a log, a log whose process never said it finished, or fewer
    trainer steps than max_steps."""
    if any(c.crashed for c in console):
        return True
    if any(c.recognized and not c.finished for c in console):
        return True
    max_steps = data.config.get("max_steps")
    if isinstance(max_steps, int) and data.trainer:
        return max(data.trainer) + data.step_offset < max_steps
    return False


def _warn_unknown_steps(data: RunData, warnings: list[str]) -> None:
    """Episodes filed under or trained at steps the trainer/orchestrator never logged are kept, and said so."""
    known = set(data.trainer) | set(data.orchestrator)
    if not known:
        return
    known_or_none = known | {0}
    unknown = [
        e
        for e in data.episodes
        if (e.window_step >= 0 and e.window_step not in known) or data.trained_at.get(e.id, 0) not in known_or_none
    ]
    if unknown:
        steps = sorted({e.window_step for e in unknown})
        warnings.append(
            f"{len(unknown)} episode(s) reference step(s) {steps[:10]} that no metrics row has "
            f"(kept), e.g. {unknown[0].source}"
        )
