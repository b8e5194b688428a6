"""Read verl's per-step metric records from the `file` logger JSONL (primary) or a console log (fallback)."""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchbed.adapterkit.lines import JsonLines, first_content_line, loads_lenient
from benchbed.errors import NotThisFrameworkError
from benchbed.logtext import split_ray_line


@dataclass
class Record:
    """One `Tracking.log(data, step)` call: where it came from and its numeric values."""

    step: int
    data: dict[str, Any]
    source: str
    line: int


@dataclass
class Reading:
    """Records read from one file, plus what the file said about the run beyond its metrics."""

    records: list[Record] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    crashed: bool = False
    config: dict[str, Any] | None = None
    actors: set[str] = field(default_factory=set)
    text_hints: list[str] = field(default_factory=list)


def is_file_logger_jsonl(path: Path) -> bool:
    """True for verl's file-logger JSONL; NotThisFrameworkError for JSON lines of another shape."""
    head = first_content_line(path).strip()
    if not head.startswith(b"{"):
        return False
    try:
        obj = loads_lenient(head)
    except ValueError:
        return head.startswith(b'{"step":') and b'"data":' in head[:64]
    if isinstance(obj, dict) and "step" in obj and isinstance(obj.get("data"), dict):
        return True
    shown = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
    raise NotThisFrameworkError(
        f"not a verl log: {path}: line 1 is JSON without verl's file-logger shape "
        f'{{"step": N, "data": {{...}}}} (keys: {shown})'
    )


def read_jsonl(path: Path) -> Reading:
    """Every `{"step": N, "data": {...}}` line; a cut-off last line is dropped with a warning (the run stopped).

    verl's file logger writes json.dumps output, which spells a NaN or inf value as a bare token: the line is kept
    and only that value is left out (one warning per key)."""
    out = Reading()
    tokens: list[int] = []  # ids of objects from lines orjson refuses: NaN/Infinity tokens, numbers overflowing

    def loads(raw: bytes) -> Any:
        try:
            return orjson.loads(raw)
        except ValueError:
            obj = json.loads(raw)
            tokens.append(id(obj))
            return obj

    lines = JsonLines(path, out.warnings, loads)
    records = out.records
    non_finite: dict[str, list[int]] = {}
    for number, obj in lines:
        step, data = obj.get("step"), obj.get("data")
        if data.__class__ is not dict or step.__class__ is not int:
            out.warnings.append(
                f'{path}:{number}: not a file-logger record (step {step!r}); expected {{"step": N, "data": {{...}}}}'
            )
            continue
        bad = (
            [k for k, v in data.items() if v.__class__ is float and not math.isfinite(v)]
            if (tokens and tokens[-1] == id(obj))
            else None
        )
        if bad:
            data = {k: v for k, v in data.items() if k not in bad}
            for key in bad:
                non_finite.setdefault(key, []).append(step)
        records.append(Record(step, data, str(path), number))
    out.truncated = lines.truncated
    for key, steps in sorted(non_finite.items()):
        shown = ", ".join(map(str, steps[:10])) + (" ..." if len(steps) > 10 else "")
        out.warnings.append(f"{path}: {key} is NaN or infinite at step(s) {shown}; left out there")
    return out


# ----------------------------------------------------------------------------------------------- console

_STEP = re.compile(r"(?:^|[\s\r|\]])step:(?P<step>-?\d+) - ")
_WRAPPED = re.compile(r"^(?:np\.\w+|numpy\.\w+|tensor|torch\.tensor)\((?P<inner>[^,)]*)")
_CRASH_MARKERS = ("Traceback (most recent call last)", "RayTaskError", "Error executing job with overrides")
_VERSION_HINT = re.compile(r"(?i)\bverl(?:==|\s+version\s*[:=]?\s*|\s*:\s*v?)(\d+\.\d+(?:\.\d+)?(?:[.\w+-]*\w)?)")


_MAX_CONFIG_LINES = 5000
_AFTER_CONFIG = ("Creating file logger", "Training Progress", "Dumped generations", "[validate_config]", "ray init")


def _ends_config(line: str) -> bool:
    """A trainer line that cannot be part of the pprinted config: the dump is over."""
    return line.startswith(_AFTER_CONFIG) or ("step:" in line and _STEP.search(line) is not None)


def clean_console_line(line: str) -> tuple[str, str | None]:
    """(text, Ray actor) with ANSI colours, Ray's `(Actor pid=N)` prefix and dedup suffix removed."""
    actor, _, text = split_ray_line(line)
    return text, actor or None


def console_value(text: str) -> float | None:
    """A console value: 0.25, np.float64(0.25), np.float32(1e-06), tensor(3.), True; None if not a number."""
    text = text.strip()
    wrapped = _WRAPPED.match(text)
    if wrapped:
        text = wrapped.group("inner")
    if text in ("True", "False"):
        return 1.0 if text == "True" else 0.0
    try:
        return float(text)
    except ValueError:
        return None


def parse_step_line(payload: str) -> tuple[dict[str, float], int]:
    """`k1:v1 - k2:v2 ...` -> ({k: v}, number of pairs that could not be read)."""
    payload = payload.split("\r", 1)[0].rstrip()
    if payload.endswith(" -"):  # a line broken right after a separator
        payload = payload[:-2]
    data: dict[str, float] = {}
    bad = 0
    for pair in payload.split(" - "):
        key, sep, raw = pair.rpartition(":")
        value = console_value(raw) if sep and key else None
        if value is None:
            bad += 1
            continue
        data[key.strip()] = value
    return data, bad


def _rejoin(payload: str, continuation: str) -> str:
    """A step line that a terminal or a paste broke in two, put back together at the break."""
    joined = payload + continuation
    joined = re.sub(r"(?<=\S) -(?=[^\s\d.])", " - ", joined)  # "1.0 -key" where the space was stripped
    return re.sub(r"(?<=[\d)])- (?=\S)", " - ", joined)  # "1.0- key"


def looks_like_console(path: Path, max_lines: int = 20000) -> bool:
    with path.open("r", errors="replace") as fh:
        for i, line in enumerate(fh):
            if i >= max_lines:
                return False
            if "step:" in line and _STEP.search(clean_console_line(line)[0]):
                return True
    return False


def read_console(path: Path) -> Reading:
    """Step lines, the pprinted config, Ray actor names, crash markers and version hints from a console log."""
    out = Reading()
    with path.open("r", errors="replace", newline="") as fh:  # keep tqdm's \r inside lines: numbers match grep -n
        text = fh.read()
    lines = text.split("\n")
    last = len(lines) - (1 if text.endswith("\n") else 0)
    before_steps: list[str] = []  # where the task runner pprints its config
    wrapped: tuple[str, Record, int] | None = None  # (payload, record, bad pairs) of the last step line
    dump_start: int | None = None
    bad_pairs = 0
    writers: list[str] = []  # which process printed each line before the steps (Ray actor and pid)
    for number, raw in enumerate(lines, 1):
        actor, pid, line = split_ray_line(raw)
        actor = actor or None
        if actor:
            out.actors.add(actor)
        if not out.records and len(before_steps) < _MAX_CONFIG_LINES:
            if dump_start is None and line.startswith("{'") and "':" in line:
                dump_start = len(before_steps)
            before_steps.append(line)
            writers.append(f"{actor or ''}:{pid}")
        if not out.crashed and any(marker in line for marker in _CRASH_MARKERS):
            out.crashed = True
            out.warnings.append(f"{path}:{number}: the run crashed here (traceback or RayTaskError); it is partial")
        if "verl" in line.lower():
            hint = _VERSION_HINT.search(line)
            if hint:
                out.text_hints.append(hint.group(1))
        match = _STEP.search(line) if "step:" in line else None
        if match is None:
            if wrapped is not None and actor is None and ":" in line:
                joined = _rejoin(wrapped[0], line)
                data, bad = parse_step_line(joined)
                if len(data) > len(wrapped[1].data) and bad <= wrapped[2] + 1:  # a wrapped step line goes on
                    bad_pairs += bad - wrapped[2]
                    wrapped[1].data = data
                    wrapped = (joined, wrapped[1], bad)
                    continue
            wrapped = None
            continue
        payload = line[match.end() :]
        data, bad = parse_step_line(payload)
        if number == last and not text.endswith("\n"):
            out.truncated = True
            out.warnings.append(f"{path}:{number}: last line is cut off (no closing newline); read its complete pairs")
        bad_pairs += bad
        wrapped = None
        if data:
            out.records.append(Record(int(match.group("step")), data, str(path), number))
            wrapped = (payload.split("\r", 1)[0], out.records[-1], bad)
    if before_steps:
        if dump_start is not None:  # other processes' lines interleaved with the dump: keep the printer's
            printer = writers[dump_start]
            before_steps = before_steps[:dump_start] + [
                text
                for text, who in zip(before_steps[dump_start:], writers[dump_start:], strict=True)
                if who == printer
            ]
        out.config = config_from_lines(before_steps, dump_start, path, out.warnings)
    if bad_pairs:
        out.warnings.append(
            f"{path}: {bad_pairs} key:value pair(s) on step lines were not numbers or were cut; skipped"
        )
    return out


# Fields read from a printed config that Ray's log de-duplication made unreadable as a whole.
_CONFIG_FIELDS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (path, re.compile(pattern, re.MULTILINE))
    for path, pattern in (
        (("trainer", "use_v1"), r"'use_v1': (True|False)"),
        (("trainer", "v1", "trainer_mode"), r"'trainer_mode': '(\w+)'"),
        (("trainer", "total_training_steps"), r"'total_training_steps': (\d+)"),
        (("data", "train_batch_size"), r"'train_batch_size': (\d+)"),
        (("actor_rollout_ref", "actor", "ppo_mini_batch_size"), r"'ppo_mini_batch_size': (\d+)"),
        # the rollout's n sits just before n_gpus_per_node (sorted keys); val_kwargs' n does not
        (("actor_rollout_ref", "rollout", "n"), r"'n': (\d+),\s*\n\s*'n_gpus_per_node'"),
        (("async_training", "trigger_parameter_sync_step"), r"'trigger_parameter_sync_step': (\d+)"),
        (("async_training", "require_batches"), r"'require_batches': (\d+)"),
        (("rollout", "nnodes"), r"^ 'rollout': \{'n(?:nodes|_gpus_per_node)': (\d+)"),
    )
)


def config_from_lines(
    lines: list[str], dump_start: int | None, path: Path, warnings: list[str]
) -> dict[str, Any] | None:
    """The pprinted config as a dict; if Ray split, reordered or de-duplicated its lines (it does all three),
    the fields benchbed needs, read from every line before the first step, marked `_partial`."""
    if dump_start is not None:
        block = lines[dump_start:]
        end = next((i for i, line in enumerate(block) if _ends_config(line)), len(block))
        try:
            value = ast.literal_eval("\n".join(block[:end]))
            if isinstance(value, dict):
                return value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    text = "\n".join(lines)
    config: dict[str, Any] = {}
    for keys, pattern in _CONFIG_FIELDS:
        match = pattern.search(text)
        if match is None:
            continue
        raw = match.group(1)
        node = config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = raw == "True" if raw in ("True", "False") else (int(raw) if raw.isdigit() else raw)
    if "'async_training': {" in text:
        config.setdefault("async_training", {})
    if not config:
        if dump_start is not None:
            warnings.append(f"{path}: the printed config could not be read; mode and batch size come from metric keys")
        return None
    warnings.append(
        f"{path}: the printed config is incomplete (Ray de-duplicates repeated log lines; launch with "
        "RAY_DEDUP_LOGS=0); read the fields benchbed needs from it"
    )
    config["_partial"] = True
    return config
