"""Read a TRL GRPO run into the canonical trace, from what TRL writes: `trainer_state.json` (log_history) and TRL's
profiling timers in the W&B offline history; plus the batch log (rewards, token counts, shuffle permutations) and
the sandbox events the rendered script leaves.

Trainer steps are spans from the W&B rows (each step ends at its log row); the batch's preparation (generation,
reward scoring) is `trainer.wait` (a colocated synchronous trainer waits while it generates), the rest of the
step, log-prob passes included, is `trainer.compute` (see timeline.py). Without a W&B history the steps are
`agg` rows of TRL's `step_time` and idle is unknown.
Each generated sample is a rollout row: v_start from the schedule, v_train from the slice it was trained in."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbed.adapters.trl.discover import STATE_FILE, latest_checkpoint_state
from benchbed.adapters.trl.emit import emit_framework, emit_samples, emit_sandboxes, emit_step_spans
from benchbed.adapters.trl.launch import ARGS_FILE, BATCHES_FILE
from benchbed.adapters.trl.schedule import Schedule
from benchbed.adapters.trl.timeline import KEYMAP, read_timeline

from benchbed.adapterkit.handoff import read_handoff
from benchbed.adapterkit.histories.console_formats import ConsoleFormat, format_of, read_console_format
from benchbed.adapterkit.keymaps import quality_key
from benchbed.adapterkit.lines import read_utf8
from benchbed.api import NotThisFrameworkError, Trace, TraceBuilder, TraceError, TraceMeta
from benchbed.api import keys as K

GRPO_KEYS = ("frac_reward_zero_std", "reward_std", "completions/mean_length")  # what GRPOTrainer logs each step
PLAIN_WARNING = (
    "{run_dir}: a TRL run benchbed did not launch (no " + ARGS_FILE + "): the group size and the "
    "per-sample rollouts (staleness, tokens) are unknown, as TRL saves its arguments only as "
    "training_args.bin (a pickle benchbed does not load) and benchbed's batch log is not there; read "
    "what trainer_state.json's log_history holds"
)

CONSOLE_WARNING = (
    "{path}: the log dicts a TRL script printed (4 significant digits): the group size, the samples "
    "per step and the per-sample rollouts are unknown; the run's output_dir (trainer_state.json) holds "
    "the full figures"
)


@dataclass
class Run:
    """What was read from one run directory."""

    path: Path
    state: dict[str, Any]
    args: dict[str, Any]
    batches: list[dict[str, Any]]
    header: dict[str, Any]
    sources: list[str]
    warnings: list[str] = field(default_factory=list)
    plain: bool = False  # written by a TRL script benchbed did not render: no resolved arguments, no batch log

    @property
    def log(self) -> list[dict[str, Any]]:
        return [e for e in self.state.get("log_history", []) if "step" in e and "train_runtime" not in e]

    @property
    def versions(self) -> dict[str, str]:
        return self.header.get("versions", {})

    @property
    def finished(self) -> bool:
        return any("train_runtime" in e for e in self.state.get("log_history", []))


def parse_path(path: Path) -> Trace:
    """A TRL run directory (or its trainer_state.json, or the log dicts its script printed) as a trace;
    NotThisFrameworkError for anything else."""
    console = format_of("trl")
    run = console_run(path, console) if console and path.is_file() and console.recognises(path) else read_run(path)
    if any("perf/step_s" in e for e in run.log):
        return parse_async(run)
    builder = TraceBuilder()
    timeline = read_timeline(run.path, run.warnings, origin=run.header.get("process_start"))
    schedule = schedule_of(run)
    steps = [int(e["step"]) for e in run.log]
    last = max(steps, default=0)
    if timeline is not None:
        run.sources.extend(timeline.sources)
        emit_step_spans(builder, timeline, steps)
        untimed = [k for k in steps if k not in timeline.step_bounds]
        if untimed:
            run.warnings.append(f"steps {untimed} are in trainer_state.json but not in the W&B history (a killed "
                                "run loses its last rows): they have no timing and are outside the window")  # fmt: skip
    else:
        where = (f" (looked for in {run.path / 'wandb'}; W&B writes it in the script's working directory unless "
                 "WANDB_DIR names another)") if run.plain and run.path.is_dir() else ""  # fmt: skip
        run.warnings.append("no W&B history (TRL sends its profiling timers only to trackers): the steps are TRL's "
                            f"step_time, and trainer idle is unknown{where}")  # fmt: skip
        for e in run.log:
            if isinstance(e.get("step_time"), int | float):
                builder.agg(K.TRAINER_STEP, int(e["step"]), float(e["step_time"]), actor="trainer")
    emit_framework(builder, run)
    origin = timeline.origin if timeline is not None else run.header.get("process_start", math.nan)
    if not run.plain:
        emit_samples(builder, run, schedule, last, timeline)
    sandbox_spans = emit_sandboxes(builder, run, origin)
    if not run.finished:
        run.warnings.append(f"TRL did not finish training: the log stops at step {last} of "
                            f"{run.state.get('max_steps', '?')} (the run was stopped or killed)")  # fmt: skip
    meta = TraceMeta(
        adapter="trl", framework="trl", framework_version=run.versions.get("trl", ""), mode="sync",
        concurrency=None if run.plain else schedule.generation_batch,
        samples_per_step=schedule.per_device_batch * schedule.grad_accum or None,
        group_size=run.args.get("num_generations"), sources=run.sources, warnings=run.warnings,
        partial=not run.finished or (timeline is not None and timeline.partial),
        extra={**({} if run.plain else {"steps_per_generation": schedule.steps_per_generation,
                  "num_iterations": schedule.num_iterations, "gradient_accumulation_steps": schedule.grad_accum}),
               "loss_type": run.args.get("loss_type"),
               "beta": run.args.get("beta"), "versions": run.versions, "sandbox_spans": sandbox_spans,
               "max_response_tokens": run.args.get("max_completion_length")},
    )  # fmt: skip
    return builder.build(meta).validate()


def read_run(path: Path) -> Run:
    path = Path(path)
    warnings: list[str] = []
    state_file = path / STATE_FILE if path.is_dir() else path
    if path.is_dir() and not state_file.is_file() and (saved := latest_checkpoint_state(path)) is not None:
        warnings.append(f"{path} has no {STATE_FILE} (trainer.save_state() was not called): read {saved}, the "
                        "last checkpoint's, so steps after it are not there")  # fmt: skip
        state_file = saved
    if state_file.name != STATE_FILE or not state_file.is_file():
        raise NotThisFrameworkError(f"not a TRL run: {path} has no {STATE_FILE}")
    run_dir = path if path.is_dir() else state_file.parent
    try:
        state = json.loads(read_utf8(state_file))
    except json.JSONDecodeError as exc:
        raise TraceError(f"{state_file}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise NotThisFrameworkError(f"not a TRL run: {state_file} has no log_history list")
    sources = [str(state_file)]
    args_file = run_dir / ARGS_FILE
    args: dict[str, Any] = {}
    if args_file.is_file():
        args = json.loads(read_utf8(args_file))
        sources.append(str(args_file))
    plain = False
    if "num_generations" not in args:
        handoff = read_handoff(run_dir, warnings)
        if handoff is not None and handoff.adapter == "trl":
            args = {"num_generations": handoff.group_size, "per_device_train_batch_size": handoff.samples_per_step}
            warnings.append(f"{ARGS_FILE} is missing (the run stopped before training began); shape from the plan")
        elif any(key in e for e in state["log_history"] if isinstance(e, dict) for key in GRPO_KEYS):
            plain = True  # a run of a plain TRL script: TRL keeps its arguments only in training_args.bin (a pickle)
            args = {"per_device_train_batch_size": state.get("train_batch_size") or 0}
            warnings.append(PLAIN_WARNING.format(run_dir=run_dir))
        else:
            raise NotThisFrameworkError(f"not a GRPO run of TRL: {run_dir} has no {ARGS_FILE} with num_generations "
                                        f"and its log_history logs none of {', '.join(GRPO_KEYS)}")  # fmt: skip
    batches, header = _batches(run_dir / BATCHES_FILE, sources)
    return Run(run_dir, state, args, batches, header, sources, warnings, plain)


def console_run(path: Path, console: ConsoleFormat) -> Run:
    """The log dicts a TRL script printed, read as trainer_state.json's log_history (steps counted from 1; the
    printed `train_runtime` summary marks a finished run)."""
    history = read_console_format(path, console)
    rows: list[dict[str, Any]] = []
    for record in history.frame.to_dict("records"):
        values = {k: record[k] for k in history.keys if not math.isnan(record[k])}
        rows.append({"step": int(record["step"]), **{k: v for k, v in values.items() if not k.startswith("end/")}})
        if any(k.startswith("end/") for k in values):
            rows.append({"step": int(record["step"]), **{k[4:]: v for k, v in values.items() if k.startswith("end/")}})
    warnings = [*history.warnings, CONSOLE_WARNING.format(path=path)]
    return Run(path, {"log_history": rows}, {"per_device_train_batch_size": 0}, [], {}, [str(path)], warnings, True)


def _batches(path: Path, sources: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(one entry per generated batch, the header line: package versions, reward function names and weights)."""
    if not path.is_file():
        return [], {}
    sources.append(str(path))
    lines = [json.loads(line) for line in read_utf8(path).splitlines() if line.strip().endswith("}")]
    header = lines[0] if lines and lines[0].get("format") == "benchbed-trl-batches" else {}
    return [e for e in lines if "permutation" in e], header


def schedule_of(run: Run) -> Schedule:
    a = run.args
    return Schedule(per_device_batch=int(a["per_device_train_batch_size"]),
                    steps_per_generation=int(a.get("steps_per_generation") or a.get("gradient_accumulation_steps", 1)),
                    num_iterations=int(a.get("num_iterations", 1)),
                    grad_accum=int(a.get("gradient_accumulation_steps", 1)))  # fmt: skip


def parse_async(run: Run) -> Trace:
    """TRL's asynchronous GRPO: per-step agg rows from its log_history (`perf/*`, `sample/*`, `batch/*`), mapped by
    keymap.toml (mode "async"); they carry no per-sample rows, so staleness is TRL's own figure."""
    release, _ = KEYMAP.nearest(run.versions.get("trl", ""))
    by_role = {role: KEYMAP.mapping(release, role, "async") for role in ("step", "component", "counter", "framework",
                                                                          "native")}  # fmt: skip
    quality = KEYMAP.at(release, "quality", "async")
    builder = TraceBuilder()
    for e in run.log:
        step = int(e["step"])
        summed: dict[str, float] = {}
        for key, value in e.items():
            if key in ("step", "epoch") or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            for role in ("step", "component", "counter"):
                if key in by_role[role]:
                    canonical = by_role[role][key]
                    summed[canonical] = summed.get(canonical, 0.0) + float(value)
                    break
            else:
                name = (by_role["framework"].get(key) or quality_key(quality, key) or by_role["native"].get(key)
                        or f"native.trl.{key}")  # fmt: skip
                builder.agg(name, step, float(value), actor="trainer")
        if K.TRAINER_STEP not in summed:
            summed.pop(K.TRAINER_WAIT, None)  # step 1 has no measured step time (TRL: nothing before it to measure)
            summed = {k: v for k, v in summed.items() if not k.startswith("trainer.")}
        for key, value in summed.items():
            builder.agg(key, step, value, actor="trainer")
    if not run.finished:
        last = run.log[-1]["step"] if run.log else 0
        run.warnings.append(f"TRL did not finish training: the log stops at step {last}")
    meta = TraceMeta(adapter="trl", framework="trl", framework_version=run.versions.get("trl", ""), mode="async",
                     samples_per_step=int(run.args.get("per_device_train_batch_size", 0)) or None,
                     group_size=run.args.get("num_generations"), sources=run.sources, warnings=run.warnings,
                     partial=not run.finished,
                     extra={"max_staleness": run.args.get("max_staleness"), "versions": run.versions})  # fmt: skip
    return builder.build(meta).validate()
