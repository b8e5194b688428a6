"""Read prime-rl console logs: loguru text (`HH:mm:ss   LEVEL message`, colours forced) or `--log.json-logging` lines.

The fallback when a run has no metrics.jsonl (always so up to v0.7). Trainer step lines carry the step time;
the trainer's wait for a batch is only logged at debug level (`Waited for batch to arrive for X seconds`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchbed.adapters.prime_rl.model import OrchestratorStep, RunData, TrainerStep

from benchbed.adapterkit.lines import text_lines
from benchbed.logtext import strip_ansi

# A loguru line, possibly behind a prefix a paste or a log collector added ("trainer-1  | ", "[rank0]: "); the
# `prime` CLI's view of a hosted run puts the level in brackets (`18:15:09 [SUCCESS] Step 2 | ...`).
TEXT_LINE = re.compile(
    r"(?:^|[\s|:>\]])(\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?\s+\[?(TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\]?\s(.*)$"
)
DEBUG_SUFFIX = re.compile(r"\s\[[^\]\s]+::\d+\]\s*$")
TAG_PREFIX = re.compile(r"^\[[^\]]+\]\s")
# Step times: `Time: 12.34s` (v0.5-), else `format_time` output ("1m 5s", "850ms"; one decimal below a minute,
# "9.5s", since prime-rl PR #2639).
TRAINER_STEP = re.compile(r"^Step (\d+) \| (?:Time: ([\d.]+)s|\s*([\d.mshd ]+?)) \| Loss:? ")
ORCH_STEP = re.compile(r"^Step (\d+) \| (?:Time: ([\d.]+)s|\s*([\d.mshd ]+?)) \| Reward:? ")
MAX_OFF_POLICY = re.compile(r"Max Off-Policy (\d+)")
LEGACY_LEVELS = re.compile(r"Async Level: (\d+) \| Max\. Off-Policy Level: (\d+)")
WAITED = re.compile(r"Waited for batch to arrive for ([\d.]+) seconds")
LOADED = re.compile(r"Loaded batch in ([\d.]+) seconds")
# Before prime-rl PR #1467 (parent d05dbe9) these two were INFO lines: the wait is the time between them.
WAITING = re.compile(r"^Waiting for training batch to arrive")
FORWARD = re.compile(r"^Starting forward and backward pass")
PAUSE = re.compile(r"^Pausing dispatcher to prevent orchestrator")
HOLD = re.compile(r"^Holding batch \d+ until the trainer publishes")
RESUME = re.compile(r"^Resuming dispatcher")
FINISHED = re.compile(r"^(RL trainer finished!|Orchestrator finished\.?)$")
TRACEBACK = "Traceback (most recent call last)"
# Messages recognized even without the loguru prefix (excerpts pasted into issues often drop it).
BARE_MESSAGES = (TRAINER_STEP, ORCH_STEP, WAITED, LOADED)
FORMAT_TIME_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")
_UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass
class LogLine:
    """One log record: seconds (epoch for JSON logs, seconds since the first midnight for text), level, message."""

    t: float
    level: str
    message: str
    lineno: int


@dataclass
class ConsoleRead:
    """What a console log contributed, to decide era and partial-ness."""

    records: int = 0
    recognized: int = 0
    legacy_format: bool = False
    finished: bool = False
    crashed: bool = False
    saw_wait: bool = False
    derived_wait: bool = False  # some waits came from timestamps, not from 'Waited for batch' lines


def parse_format_time(text: str) -> float:
    """Inverse of prime-rl's `format_time` ("1m 5s", "850ms", "2h 3m", "12s", "9.5s"); NaN if unparseable."""
    compact = text.replace(" ", "")
    parts = FORMAT_TIME_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        return math.nan
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def iter_records(path: Path) -> list[LogLine]:
    """Records of a text or JSON console log, with midnight rollovers of HH:mm:ss handled."""
    out: list[LogLine] = []
    day = 0.0
    last = -1.0
    for lineno, line in enumerate(text_lines(path), start=1):
        if line.startswith("{"):
            record = _json_record(line, lineno)
            if record is not None:
                out.append(record)
            continue
        m = TEXT_LINE.search(line)
        if not m:
            bare = line.strip()
            if any(p.match(bare) for p in BARE_MESSAGES):  # a pasted message without its time and level
                out.append(LogLine(math.nan, "", DEBUG_SUFFIX.sub("", bare), lineno))
            continue
        t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        if last >= 0 and t + day < last - 12 * 3600:
            day += 86400.0
        last = t + day
        message = DEBUG_SUFFIX.sub("", m.group(5).strip())
        out.append(LogLine(last, m.group(4), TAG_PREFIX.sub("", message), lineno))
    return out


def _json_record(line: str, lineno: int) -> LogLine | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "message" not in obj or "level" not in obj:
        return None
    try:
        t = datetime.fromisoformat(str(obj.get("timestamp"))).timestamp()
    except ValueError:
        t = math.nan
    return LogLine(t, str(obj["level"]), TAG_PREFIX.sub("", str(obj["message"]).strip()), lineno)


def looks_like_console_log(path: Path) -> bool:
    """True if any of the first lines is a loguru text line or a prime-rl JSON log record."""
    with path.open("rb") as fh:
        head = fh.read(65536).decode(errors="replace")
    for line in strip_ansi(head).splitlines()[:200]:
        if TEXT_LINE.search(line) or any(p.match(line.strip()) for p in BARE_MESSAGES):
            return True
        if line.startswith("{") and '"message"' in line and '"level"' in line and '"timestamp"' in line:
            return True
    return False


def read_console_log(path: Path, data: RunData) -> ConsoleRead:
    """Fill trainer steps, orchestrator steps and dispatcher pauses from one console log."""
    info = ConsoleRead()
    pending_wait = math.nan
    pending_load = math.nan
    hold_start: float | None = None
    gate_start: float | None = None
    waiting_since: float | None = None
    records = iter_records(path)
    info.crashed = TRACEBACK in path.read_text(errors="replace")
    info.records = len(records)
    for rec in records:
        msg = rec.message
        where = f"{path}:{rec.lineno}"
        if rec.level in ("ERROR", "CRITICAL"):
            info.crashed = True
        if m := WAITED.search(msg):
            pending_wait = float(m.group(1))
            info.saw_wait = True
            info.recognized += 1
        elif m := LOADED.search(msg):
            pending_load = float(m.group(1))
            info.recognized += 1
        elif WAITING.match(msg):
            waiting_since = rec.t
            info.recognized += 1
        elif FORWARD.match(msg):
            if waiting_since is not None and math.isnan(pending_wait):
                load = 0.0 if math.isnan(pending_load) else pending_load
                pending_wait = max(0.0, rec.t - waiting_since - load)
                info.derived_wait = True
            waiting_since = None
            info.recognized += 1
        elif m := TRAINER_STEP.match(msg):
            step_s = float(m.group(2)) if m.group(2) else parse_format_time(m.group(3))
            info.legacy_format |= m.group(2) is not None
            step = int(m.group(1))
            data.trainer[step] = TrainerStep(
                step, step_s, wait_s=pending_wait, load_s=pending_load, t_end=rec.t, source=where
            )
            pending_wait = pending_load = math.nan
            info.recognized += 1
        elif m := ORCH_STEP.match(msg):
            step = int(m.group(1))
            values: dict[str, float] = {}
            if m.group(2):
                info.legacy_format = True
                values["time/step"] = float(m.group(2))
            else:
                values["time/step"] = parse_format_time(m.group(3))
            if lv := LEGACY_LEVELS.search(msg):
                values["scheduler/async_level"] = float(lv.group(1))
                values["off_policy_level/all/max"] = float(lv.group(2))
            elif mo := MAX_OFF_POLICY.search(msg):
                values["off_policy/max"] = float(mo.group(1))
            data.orchestrator[step] = OrchestratorStep(step, values, rec.t, where)
            if hold_start is not None:
                data.pauses.append((hold_start, rec.t))
                hold_start = None
            info.recognized += 1
        elif HOLD.match(msg):
            hold_start = rec.t if hold_start is None else hold_start
            info.recognized += 1
        elif PAUSE.match(msg):
            gate_start = rec.t if gate_start is None else gate_start
            info.recognized += 1
        elif RESUME.match(msg):
            if gate_start is not None:
                data.pauses.append((gate_start, rec.t))
                gate_start = None
            info.recognized += 1
        elif FINISHED.match(msg):
            info.finished = True
            info.recognized += 1
    for start in (hold_start, gate_start):
        if start is not None and records:
            data.pauses.append((start, records[-1].t))
    if info.recognized:
        data.sources.append(str(path))
    return info
