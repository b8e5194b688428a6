"""Read verl's per-step metric records from the `file` logger JSONL (primary) or a console log (fallback)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapterkit.histories.console import (
    STEP_LINE,
    StepLines,
    console_value,
    parse_step_line,
    read_text_lines,
)
from benchbed.adapterkit.histories.jsonl import read_step_columns
from benchbed.adapterkit.lines import first_content_line, loads_lenient
from benchbed.adapterkit.pyrepr import ReprError, parse_repr_dict
from benchbed.adapterkit.shared import split_ray_line
from benchbed.adapterkit.step_columns import Record, StepColumns, fits_int64
from benchbed.api import NotThisFrameworkError

# the console's value and step-line readers are the kit's (verl's Tracking console format), named here as well
__all__ = [
    "ConsoleReading",
    "Reading",
    "Record",
    "clean_console_line",
    "config_from_lines",
    "console_value",
    "is_file_logger_jsonl",
    "parse_step_line",
    "read_console",
    "read_jsonl",
]


@dataclass
class Reading:
    """Records read from one file, plus what the file said about the run beyond its metrics."""

    records: StepColumns = field(default_factory=StepColumns)  # one `Tracking.log(data, step)` call each
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
    """Every `{"step": N, "data": {...}}` line (the kit's JSONL record reader, into columns); a cut-off last line is
    dropped with a warning (the run stopped), a NaN or inf value is left out of its line (one warning per key)."""
    out = Reading()
    out.records, out.truncated = read_step_columns(path, out.warnings)
    return out


# ----------------------------------------------------------------------------------------------- console

_CRASH_MARKERS = ("Traceback (most recent call last)", "RayTaskError", "Error executing job with overrides")
_VERSION_HINT = re.compile(r"(?i)\bverl(?:==|\s+version\s*[:=]?\s*|\s*:\s*v?)(\d+\.\d+(?:\.\d+)?(?:[.\w+-]*\w)?)")


_MAX_CONFIG_LINES = 5000
_AFTER_CONFIG = ("Creating file logger", "Training Progress", "Dumped generations", "[validate_config]", "ray init")


def _ends_config(line: str) -> bool:
    """A trainer line that cannot be part of the pprinted config: the dump is over."""
    return line.startswith(_AFTER_CONFIG) or ("step:" in line and STEP_LINE.search(line) is not None)


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _dump_length(block: list[str]) -> int:
    """Lines of the pprinted config at the head of `block`: up to the one that closes its first brace (the task
    runner prints more before its first step, e.g. verl 0.9.1's V1 `dataset len: 6`), else up to the first line
    that cannot belong to it."""
    depth = 0
    for i, line in enumerate(block):
        if _ends_config(line):
            return i
        bare = _QUOTED.sub("", line)
        depth += sum(bare.count(c) for c in "{[(") - sum(bare.count(c) for c in "}])")
        if depth <= 0:
            return i + 1
    return len(block)


def clean_console_line(line: str) -> tuple[str, str | None]:
    """(text, Ray actor) with ANSI colours, Ray's `(Actor pid=N)` prefix and dedup suffix removed."""
    actor, _, text = split_ray_line(line)
    return text, actor or None


@dataclass
class ConsoleReading:
    """One verl console log read a line at a time (`feed`): its step lines (the kit's StepLines), the lines before
    the first step (where the task runner pprints its config), Ray actor names, crash markers and version hints.
    `read_console` feeds it a whole file; `benchbed watch` feeds it the lines as they are appended (adapters.verl.live),
    so both read the same rows and the same config."""

    path: Path
    out: Reading = field(default_factory=Reading)
    steps: StepLines = field(init=False)
    before_steps: list[str] = field(default_factory=list)
    dump_start: int | None = None
    writers: list[str] = field(default_factory=list)  # which process printed each line before the steps

    def __post_init__(self) -> None:
        self.steps = StepLines(self.path)

    def feed(self, number: int, raw: str, cut_off: bool) -> None:
        """Read line `number` as the file holds it (Ray prefix and ANSI colours still on); `cut_off` marks a last line
        without its closing newline."""
        out = self.out
        actor, pid, line = split_ray_line(raw)
        actor = actor or None
        if actor:
            out.actors.add(actor)
        if not self.steps.rows and len(self.before_steps) < _MAX_CONFIG_LINES:
            if self.dump_start is None and line.startswith("{'") and "':" in line:
                self.dump_start = len(self.before_steps)
            self.before_steps.append(line)
            self.writers.append(f"{actor or ''}:{pid}")
        if not out.crashed and any(marker in line for marker in _CRASH_MARKERS):
            out.crashed = True
            where = f"{self.path}:{number}"
            out.warnings.append(f"{where}: the run crashed here (traceback or RayTaskError); it is partial")
        if "verl" in line.lower():
            hint = _VERSION_HINT.search(line)
            if hint:
                out.text_hints.append(hint.group(1))
        self.steps.feed(number, line, actor, cut_off, out.warnings)

    def config(self, warnings: list[str]) -> dict[str, Any] | None:
        """The printed config, from the lines before the first step (whole once a step line has been read)."""
        if not self.before_steps:
            return None
        lines = self.before_steps
        if self.dump_start is not None:  # other processes' lines interleaved with the dump: keep the printer's
            printer = self.writers[self.dump_start]
            lines = lines[: self.dump_start] + [
                text
                for text, who in zip(lines[self.dump_start :], self.writers[self.dump_start :], strict=True)
                if who == printer
            ]
        return config_from_lines(lines, self.dump_start, self.path, warnings)

    def finish(self) -> Reading:
        """The whole reading, once every line has been fed."""
        out = self.out
        for row in self.steps.rows:
            if fits_int64(row.step):
                out.records.add(row.step, row.data, str(self.path), row.line)
            else:
                out.warnings.append(f"{self.path}:{row.line}: step {row.step} is past any step count; line skipped")
        out.truncated = self.steps.truncated
        out.config = self.config(out.warnings)
        self.steps.finish(out.warnings)
        return out


def read_console(path: Path) -> Reading:
    """Step lines (read by the kit's console history reader), the pprinted config, Ray actor names, crash markers
    and version hints from a console log, in one pass."""
    reading = ConsoleReading(path)
    for number, raw, cut_off in read_text_lines(path):
        reading.feed(number, raw, cut_off)
    return reading.finish()


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
        try:
            return parse_repr_dict("\n".join(block[: _dump_length(block)]))
        except (ReprError, MemoryError, RecursionError):
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
