"""parse(path): a verl file-logger JSONL, console log or run directory -> the canonical trace."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.verl.detect import detect, version_from_files
from benchbed.adapters.verl.discover import (
    CONSOLE,
    HYDRA_CONFIG,
    JSONL,
    ROLLOUT_DUMPS,
    WORKER_LOGS,
    find_artifacts,
    read_hydra_config,
)
from benchbed.adapters.verl.emit import Segment, emit_steps, segments_of
from benchbed.adapters.verl.evictions import emit_eviction_counts
from benchbed.adapters.verl.failed_start import failed_start
from benchbed.adapters.verl.keymap import mode_map
from benchbed.adapters.verl.records import Reading, read_console, read_jsonl
from benchbed.adapters.verl.rollouts import read_rollout_dumps
from benchbed.adapters.verl.worker_logs import ToolFailures, scan_worker_logs

from benchbed.adapterkit.artifacts import Artifacts
from benchbed.adapterkit.handoff import Handoff
from benchbed.adapterkit.lines import head_bytes
from benchbed.adapterkit.step_columns import StepColumns
from benchbed.api import AdapterError, NotThisFrameworkError, Trace, TraceBuilder, TraceMeta, attrs_json

EXPECTED_TIMERS = ("timing_s/step", "timing_s/gen", "timing_s/update_actor", "timing_s/old_log_prob")
_OTHER_FRAMEWORKS = {b"slime": "slime", b"prime_rl": "prime-rl", b"prime-rl": "prime-rl", b"areal": "AReaL"}


def _other_framework(path: Path) -> str:
    head = head_bytes(path).lower()
    for needle, name in _OTHER_FRAMEWORKS.items():
        if needle in head:
            return f"; it mentions {name}"
    return ""


def _unreadable(path: Path, warnings: list[str]) -> str:
    """The one line refusing a file-logger JSONL with no readable record: its first skipped line, or the file."""
    first = next((w for w in warnings if w.startswith(f"{path}:")), f"{path}: every line is blank")
    return f'{first}; no line of it is a readable file-logger record ({{"step": N, "data": {{...}}}})'


def _int(cfg: dict[str, Any] | None, *path: str) -> int | None:
    node: Any = cfg
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, int) and not isinstance(node, bool) and node > 0 else None


def _sizes(
    mode: str, cfg: dict[str, Any] | None, plan: Handoff | Mapping[str, Any] | None
) -> tuple[int | None, int | None, int | None]:
    """(samples per benchbed step, samples per fully_async local step, group size) from config or plan.

    A config rebuilt from Ray-mangled lines (`_partial`) is not trusted for sizes: its numbers may be another
    section's."""
    plan = plan or Handoff(adapter="verl")
    if cfg and cfg.get("_partial"):
        cfg = None
    group = _int(cfg, "actor_rollout_ref", "rollout", "n") or plan.get("group_size")
    if mode == "fully_async":
        mini = _int(cfg, "actor_rollout_ref", "actor", "ppo_mini_batch_size")
        require = _int(cfg, "async_training", "require_batches") or 1
        trigger = _int(cfg, "async_training", "trigger_parameter_sync_step")
        local = mini * require * group if mini and group else plan.get("samples_per_local_step")
        per_step = local * trigger if local and trigger else plan.get("samples_per_step")
        return per_step, local, group
    prompts = _int(cfg, "data", "train_batch_size")
    per_step = prompts * group if prompts and group else plan.get("samples_per_step")
    return per_step, None, group


def parse_path(path: Path) -> Trace:
    """Read a verl run (directory, JSONL or console log) into a validated Trace."""
    path = Path(path)
    if not path.exists():
        raise AdapterError(f"{path}: no such file or directory; pass a verl run directory, JSONL or console log")
    found = find_artifacts(path)
    warnings: list[str] = list(found.warnings)
    jsonl, console_files = found.of(JSONL), found.of(CONSOLE)
    if found.empty(JSONL, CONSOLE, WORKER_LOGS):
        failure = failed_start(path, found)
        if failure is not None:
            raise failure
        if path.is_file():
            raise NotThisFrameworkError(
                found.rejected[0]
                if found.rejected
                else f'not a verl log: {path}: no file-logger lines ({{"step": N, "data": {{...}}}}), no console '
                f"step lines (step:N - key:value - ...) and no verl tool-failure lines{_other_framework(path)}"
            )
        why = "; ".join(r.removeprefix("not a verl log: ") for r in found.rejected[:3])
        raise NotThisFrameworkError(
            f"not a verl log: {path}: no file-logger JSONL, console log with step lines or worker log found"
            + (f" ({why})" if why else "")
        )
    readings = [read_jsonl(p) for p in jsonl]
    consoles = [read_console(p) for p in console_files]
    records = _joined([reading.records for reading in readings])
    primary: list[Reading] = readings
    if not records and consoles:
        best = max(consoles, key=lambda c: len(c.records))
        records, primary = best.records, [best]
        if jsonl:
            warnings.append(f"{jsonl[0]}: no complete records; steps were read from {best.records.source(0)}")
    if not records and readings and not consoles and not found.of(WORKER_LOGS):
        raise AdapterError(_unreadable(jsonl[0], readings[0].warnings))
    for reading in readings + consoles:
        warnings.extend(reading.warnings)
    explicit = version_from_files(path) if path.is_dir() else None
    if explicit is None:
        hints = [
            (h, c.records.source(0) if c.records else str(console_files[0])) for c in consoles for h in c.text_hints
        ]
        explicit = hints[0] if hints else None
    return build_trace(
        Inputs(
            records=records,
            warnings=warnings,
            config=_best_config(consoles, found),
            actors={a for c in consoles for a in c.actors},
            explicit_version=explicit,
            plan=found.handoff,
            dumps=found.of(ROLLOUT_DUMPS),
            worker_logs=found.of(WORKER_LOGS),
            partial=any(r.crashed for r in consoles) or any(r.truncated for r in primary),
            sources=[str(p) for p in jsonl + console_files],
            timing_source=str((jsonl or console_files or [Path("?")])[0]),
        )
    )


@dataclass
class Inputs:
    """What a verl run's files (or a tracker's history of it) give the trace: the per-step records and the facts
    around them."""

    records: StepColumns
    warnings: list[str]
    config: dict[str, Any] | None
    timing_source: str  # the file or URI named in warnings about the records' timers
    sources: list[str]
    actors: set[str] = field(default_factory=set)
    explicit_version: tuple[str, str] | None = None
    plan: Handoff | None = None
    dumps: list[Path] = field(default_factory=list)
    worker_logs: list[Path] = field(default_factory=list)
    partial: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def build_trace(inp: Inputs) -> Trace:
    """The trace of a verl run from its records: detection, steps, samples, warnings, metadata."""
    records, warnings, config, plan = inp.records, inp.warnings, inp.config, inp.plan
    keys = records.key_set() if len(records) < 2000 else _sampled_keys(records)
    det = detect(keys, config, inp.actors, inp.explicit_version, plan.mode if plan else None, warnings)
    builder = TraceBuilder()
    per_step, per_local, group = _sizes(det.mode, config, plan)
    segments = segments_of(records, warnings)  # merged records are added to `records`
    step_of = cycle_of_local_step(segments) if det.mode == "fully_async" else None
    dumps = inp.dumps
    rollout_counts = read_rollout_dumps(dumps, det.mode, builder, warnings, step_of) if dumps else {}
    mm = mode_map(det.keymap, det.mode)

    def samples_for(step: int, local_steps: int) -> float | None:
        if step in rollout_counts:
            return float(rollout_counts[step])
        if per_local:
            return float(per_local * local_steps)
        return float(per_step) if per_step else None

    summary = emit_steps(segments, mm, builder, samples_for)
    if det.mode.startswith("v1"):
        emit_eviction_counts(segments, group, samples_for, builder)
    _timing_warnings(summary, records, inp.timing_source, warnings)
    if mm.first_step != 1 and records:
        warnings.append(
            f"verl {det.keymap} key map: this release counts steps from {mm.first_step}; "
            f"steps are shifted by {1 - mm.first_step:+d} so that the first step is 1"
        )
    failures = scan_worker_logs(inp.worker_logs) if inp.worker_logs else None
    total = None if config is None or config.get("_partial") else _int(config, "trainer", "total_training_steps")
    stopped_early = total is not None and summary.steps and summary.last_step < total and det.mode != "fully_async"
    if stopped_early:
        warnings.append(f"the run stopped at step {summary.last_step} of trainer.total_training_steps={total}")
    extra: dict[str, Any] = {
        "keymap": det.keymap, "version_source": det.evidence["version"], "mode_source": det.evidence["mode"],
        "segments": summary.segments, "steps": summary.steps, **inp.extra,
    }  # fmt: skip
    if det.mode == "fully_async":
        extra["step_unit"] = "parameter-sync cycle (verl logs step = parameter version)"
        extra["local_steps_per_step"] = summary.local_steps
    if failures is not None:
        extra["tool_failures"] = _emit_failures(failures, builder)
    meta = TraceMeta(
        adapter="verl",
        framework="verl",
        framework_version=det.version,
        mode=det.mode,
        concurrency=plan.concurrency if plan else None,
        samples_per_step=per_step,
        group_size=group,
        sources=inp.sources + [str(p) for p in dumps[:1] + inp.worker_logs],
        warnings=warnings,
        partial=bool(inp.partial or stopped_early),
        extra=extra,
    )
    return builder.build(meta).validate()


def cycle_of_local_step(segments: list[Segment]) -> Callable[[int], int]:
    """fully_async dumps rollouts by local trainer step; its records are sync cycles ending at a local step."""
    records = [(segment.records, i) for segment in segments for i in segment.rows.tolist()]
    ends = sorted(
        (int(global_step), columns.steps[i])
        for columns, i in records
        if isinstance(global_step := columns.get(i, "training/global_step"), (int, float))
    )
    bounds = [end for end, _ in ends]

    def step_of(local_step: int) -> int:
        i = bisect.bisect_left(bounds, local_step)
        return ends[i][1] if i < len(ends) else local_step

    return step_of


def _best_config(consoles: list[Reading], found: Artifacts) -> dict[str, Any] | None:
    """A whole printed config, else Hydra's saved one, else one rebuilt from Ray-mangled lines."""
    printed = [c.config for c in consoles if c.config]
    whole = next((c for c in printed if not c.get("_partial")), None)
    if whole is not None:
        return whole
    saved = next((c for p in found.of(HYDRA_CONFIG) if (c := read_hydra_config(p))), None)
    return saved or (printed[0] if printed else None)


def _emit_failures(failures: ToolFailures, builder: TraceBuilder) -> dict[str, Any]:
    """One native.tool_failures agg row per (source, tool, reason); the summary for TraceMeta.extra."""
    for (source, tool, reason), count in sorted(failures.counts.items()):
        builder.agg(
            "native.tool_failures", -1, float(count), status=reason, actor=source,
            attrs=attrs_json({"tool": tool, "example": failures.examples.get(reason, "")}),
        )  # fmt: skip
    return {
        "total": failures.total,
        "by_reason": _by(failures.counts, 2),
        "by_tool": _by(failures.counts, 1),
        "files": failures.files,
    }


def _by(counts: Any, index: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, count in counts.items():
        out[key[index] or key[0]] = out.get(key[index] or key[0], 0) + count
    return out


def _sampled_keys(records: StepColumns) -> set[str]:
    """Keys of a long run from a spread of records (first, last, and every 500th)."""
    every = range(len(records))
    return records.key_set([*every[:50], *every[-50:], *every[::500]])


def _joined(parts: list[StepColumns]) -> StepColumns:
    """The records of several files as one set, in file order (one file's columns as they are)."""
    if len(parts) == 1:
        return parts[0]
    out = StepColumns()
    for part in parts:
        for i in range(len(part)):
            out.add(part.steps[i], part.data(i), part.source(i), part.lines[i])
    return out


def _timing_warnings(summary: Any, records: StepColumns, source: str, warnings: list[str]) -> None:
    if records and not summary.timing_keys:
        warnings.append(
            f"{source}: no verl timing keys ({', '.join(EXPECTED_TIMERS)} ...): trainer step time, idle ratio and "
            "the step breakdown cannot be computed; the trace keeps the figures that exist"
        )
    elif records and summary.steps == 0:
        warnings.append(f"{source}: timers are logged but timing_s/step is missing; no trainer.step rows")
    if summary.summed:
        warnings.append(
            f"{source}: this verl release logs no timer around the whole step; trainer.step is taken as the sum of "
            "its phase timers, which leaves out the time between them (data loading, logging): step times are a "
            "lower bound and trainer_idle_ratio an upper bound"
        )
    if summary.negative:
        steps = sorted(summary.negative)
        keys = sorted({k for ks in summary.negative.values() for k in ks})
        warnings.append(
            f"{source}: negative durations ({', '.join(keys[:5])}) at step(s) {_shown(steps)}: impossible, so "
            "those steps' trainer times are left out of the trace"
        )
    if summary.null_step:
        warnings.append(
            f"{source}: the step timer is null or not a number at step(s) {_shown(summary.null_step)}; "
            "those steps have no trainer.step row"
        )
    if summary.gaps:
        ranges = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in summary.gaps[:10])
        missing = sum(b - a + 1 for a, b in summary.gaps)
        warnings.append(
            f"{source}: step(s) {ranges}{' ...' if len(summary.gaps) > 10 else ''} are missing from the log "
            f"({missing} step(s) in {len(summary.gaps)} gap(s)); figures cover the steps present only"
        )
    overrun = summary.breakdown.warning()
    if overrun:
        warnings.append(overrun)


def _shown(steps: list[int], limit: int = 10) -> str:
    return ", ".join(map(str, steps[:limit])) + (" ..." if len(steps) > limit else "")
