"""Read prime-rl console logs: loguru text (`HH:mm:ss   LEVEL message`, colours forced) or `--log.json-logging` lines.

The fallback when a run has no metrics.jsonl (always so up to v0.7). Trainer step lines carry the step time;
the trainer's wait for a batch is only logged at debug level (`Waited for batch to arrive for X seconds`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchbed.adapters.prime_rl.keymap import KEYMAP
from benchbed.adapters.prime_rl.model import OrchestratorStep, RunData, TrainerStep

from benchbed.adapterkit.lines import text_lines
from benchbed.adapterkit.shared import strip_ansi

LINE = KEYMAP.lines  # the console lines read here (keymap.toml [lines])
TRACEBACK = "Traceback (most recent call last)"
# Messages recognized even without the loguru prefix (excerpts pasted into issues often drop it).
BARE_MESSAGES = tuple(LINE[name] for name in ("trainer_step", "orchestrator_step", "waited", "loaded"))
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
    parts = LINE["format_time_part"].findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        return math.nan
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def iter_records(path: Path) -> list[LogLine]:
    """Records of a text or JSON console log, with midnight rollovers of HH:mm:ss handled."""
    out: list[LogLine] = []
    day = 0.0
    last = -1.0
    text_line, debug_suffix, tag_prefix = LINE["text_line"], LINE["debug_suffix"], LINE["tag_prefix"]
    for lineno, line in enumerate(text_lines(path), start=1):
        if line.startswith("{"):
            record = _json_record(line, lineno)
            if record is not None:
                out.append(record)
            continue
        m = text_line.search(line)
        if not m:
            bare = line.strip()
            if any(p.match(bare) for p in BARE_MESSAGES):  # a pasted message without its time and level
                out.append(LogLine(math.nan, "", debug_suffix.sub("", bare), lineno))
            continue
        t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        if last >= 0 and t + day < last - 12 * 3600:
            day += 86400.0
        last = t + day
        message = debug_suffix.sub("", m.group(5).strip())
        out.append(LogLine(last, m.group(4), tag_prefix.sub("", message), lineno))
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
    return LogLine(t, str(obj["level"]), LINE["tag_prefix"].sub("", str(obj["message"]).strip()), lineno)


def looks_like_console_log(path: Path) -> bool:
    """True if any of the first lines is a loguru text line or a prime-rl JSON log record."""
    with path.open("rb") as fh:
        head = fh.read(65536).decode(errors="replace")
    for line in strip_ansi(head).splitlines()[:200]:
        if LINE["text_line"].search(line) or any(p.match(line.strip()) for p in BARE_MESSAGES):
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
        if m := LINE["waited"].search(msg):
            pending_wait = float(m.group(1))
            info.saw_wait = True
            info.recognized += 1
        elif m := LINE["loaded"].search(msg):
            pending_load = float(m.group(1))
            info.recognized += 1
        elif LINE["waiting"].match(msg):
            waiting_since = rec.t
            info.recognized += 1
        elif LINE["forward"].match(msg):
            if waiting_since is not None and math.isnan(pending_wait):
                load = 0.0 if math.isnan(pending_load) else pending_load
                pending_wait = max(0.0, rec.t - waiting_since - load)
                info.derived_wait = True
            waiting_since = None
            info.recognized += 1
        elif m := LINE["trainer_step"].match(msg):
            step_s = float(m.group(2)) if m.group(2) else parse_format_time(m.group(3))
            info.legacy_format |= m.group(2) is not None
            step = int(m.group(1))
            data.trainer[step] = TrainerStep(
                step, step_s, wait_s=pending_wait, load_s=pending_load, t_end=rec.t, source=where
            )
            pending_wait = pending_load = math.nan
            info.recognized += 1
        elif m := LINE["orchestrator_step"].match(msg):
            step = int(m.group(1))
            values: dict[str, float] = {}
            if m.group(2):
                info.legacy_format = True
                values["time/step"] = float(m.group(2))
            else:
                values["time/step"] = parse_format_time(m.group(3))
            if lv := LINE["legacy_levels"].search(msg):
                values["scheduler/async_level"] = float(lv.group(1))
                values["off_policy_level/all/max"] = float(lv.group(2))
            elif mo := LINE["max_off_policy"].search(msg):
                values["off_policy/max"] = float(mo.group(1))
            data.orchestrator[step] = OrchestratorStep(step, values, rec.t, where)
            if hold_start is not None:
                data.pauses.append((hold_start, rec.t))
                hold_start = None
            info.recognized += 1
        elif LINE["hold"].match(msg):
            hold_start = rec.t if hold_start is None else hold_start
            info.recognized += 1
        elif LINE["pause"].match(msg):
            gate_start = rec.t if gate_start is None else gate_start
            info.recognized += 1
        elif LINE["resume"].match(msg):
            if gate_start is not None:
                data.pauses.append((gate_start, rec.t))
                gate_start = None
            info.recognized += 1
        elif LINE["finished"].match(msg):
            info.finished = True
            info.recognized += 1
        elif LINE["sft_start"].match(msg):
            data.sft = data.sft or f"{where}: 'Starting SFT trainer'"
            info.recognized += 1
    for start in (hold_start, gate_start):
        if start is not None and records:
            data.pauses.append((start, records[-1].t))
    if info.recognized:
        data.sources.append(str(path))
    return info
