"""Read the reference engine's native event log (events/*.jsonl, summary.json) into the canonical trace."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import benchbed
from benchbed.adapterkit.shared import Ev, SandboxEvent, add_spans
from benchbed.api import NotThisFrameworkError, Trace, TraceBuilder, TraceError, TraceMeta, attrs_json
from benchbed.api import keys as K
from benchbed.engine.eventlog import EVENTS_DIRNAME, SUMMARY_FILENAME

FRAMEWORK = "benchbed-ref"
# How a finished group that was not trained is recorded on its samples and its rollout.group point.
GROUP_STATUS = {"filtered_zero_adv": "filtered_zero_adv", "discarded": "discarded", "dropped_stale": "dropped_stale"}


def read_events(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every event of every process, in time order, and the files read. Raises NotThisFrameworkError when the
    directory holds no engine log."""
    directory = path / EVENTS_DIRNAME if path.is_dir() else path.parent
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    if path.is_file() and path.suffix == ".jsonl":
        files = sorted(path.parent.glob("*.jsonl"))
    if not files:
        raise NotThisFrameworkError(f"not a ref run: {path} has no {EVENTS_DIRNAME}/*.jsonl event log")
    events = []
    for file in files:
        for number, line in enumerate(file.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                if number == len(file.read_text().splitlines()):
                    continue  # the last line of a killed process may be cut short
                raise TraceError(f"{file}:{number}: not a JSON event line") from None
            if not isinstance(event, dict) or "ev" not in event or "t" not in event:
                raise TraceError(f"{file}:{number}: expected an object with 'ev' and 't'")
            events.append(event)
    if not any(e["ev"] == "run_start" for e in events):
        raise NotThisFrameworkError(f"not a ref run: {directory} has no run_start event")
    events.sort(key=lambda e: e["t"])
    return events, [str(f) for f in files]


def _by(events: list[dict[str, Any]], ev: str) -> list[dict[str, Any]]:
    return [e for e in events if e["ev"] == ev]


def emit_trainer(b: TraceBuilder, events: list[dict[str, Any]], origin: float) -> None:
    """Spans of every step and its wait, compute and weight sync; the engine's own idle figure beside them."""
    for e in _by(events, "step"):
        k = e["step"]
        t0, t_wait, t_compute, t1 = (e[name] - origin for name in ("t0", "t_wait_end", "t_compute_end", "t1"))
        b.span(K.TRAINER_STEP, t0, t1, step=k, actor="trainer", v_train=e["v_train"])
        b.span(K.TRAINER_WAIT, max(t0, t_wait - e["wait_s"]), t_wait, step=k, actor="trainer")
        b.span(K.TRAINER_COMPUTE, t_wait, t_compute, step=k, actor="trainer")
        b.span(K.TRAINER_WEIGHT_SYNC, t_compute, t1, step=k, actor="trainer")
        for name in ("loss", "reward_mean", "grad_norm", "clip_fraction", "tokens"):
            if name in e:
                key = K.QUALITY_REWARD if name == "reward_mean" else f"native.trainer.{name}"
                b.agg(key, k, float(e[name]), actor="trainer")


def emit_summary(b: TraceBuilder, summary: dict[str, Any]) -> None:
    """The engine's own trainer idle figure (its measured waits over its measured step times, same window)."""
    idle, steps = summary.get("trainer_idle_ratio"), summary.get("steps") or []
    if isinstance(idle, int | float) and steps:
        b.agg("framework.trainer_idle_ratio", steps[-1]["step"], float(idle), actor="trainer")


def emit_rollouts(b: TraceBuilder, events: list[dict[str, Any]], origin: float) -> None:
    """One rollout span per sample with its versions and final status, and one rollout.group point per group."""
    trained: dict[str, int] = {}
    for e in _by(events, "batch"):
        for sid in e["samples"]:
            trained[sid] = e["step"]
        if e["staleness"]:
            b.agg("framework.staleness_mean", e["step"], sum(e["staleness"]) / len(e["staleness"]),
                  actor="orchestrator")  # fmt: skip
    fate: dict[str, tuple[str, int]] = {}
    for e in _by(events, "group"):
        if e["status"] in GROUP_STATUS:
            fate[e["group"]] = (GROUP_STATUS[e["status"]], e["step"])
    for e in _by(events, "drop"):
        fate[e["group"]] = ("dropped_stale", e["step"])
    env_staleness = {e["sample"]: e["env_staleness"] for e in _by(events, "resume")}
    for e in _by(events, "rollout"):
        sid, gid = e["sample"], e["group"]
        status, step, v_train = e["status"], -1, -1
        if status == "done":
            if sid in trained:
                status, step, v_train = "ok", trained[sid], trained[sid] - 1
            elif gid in fate:
                status, step = fate[gid]
            else:
                status = "ok"  # accepted, not consumed before the run ended
        elif status not in ("failed", "aborted"):
            raise TraceError(f"rollout {sid}: unknown status {status!r}")
        reward = e["reward"] if isinstance(e["reward"], int | float) else math.nan
        attrs = {"tokens": e["tokens"], "versions": e["spans"], "resumes": e["resumes"], "straggler": e["straggler"],
                 "env_version": e["env_version"]}  # fmt: skip
        if sid in env_staleness:  # the metric's key; the engine's own figure at the sample's last resume
            attrs["staleness_env"] = env_staleness[sid]
        if e["error"]:
            attrs["error"] = e["error"]
        t1 = e["t1"] if isinstance(e["t1"], int | float) and math.isfinite(e["t1"]) else e["t"]
        b.span(K.ROLLOUT, e["t0"] - origin, max(t1, e["t0"]) - origin, step=step, value=reward, actor="generator",
               sample=sid, group=gid, v_start=e["v_start"], v_end=e["v_end"], v_train=v_train, status=status,
               attrs=attrs_json(attrs))  # fmt: skip
    for e in _by(events, "group"):
        std = e["reward_std"]
        if not isinstance(std, int | float) or not math.isfinite(std):
            continue  # too few samples finished to form a group
        status, step = fate.get(e["group"], ("ok", e["step"]))
        b.point(K.ROLLOUT_GROUP, e["t"] - origin, step=step, value=std, actor="orchestrator", group=e["group"],
                v_start=e["v_start"], status=status)  # fmt: skip


def emit_sandboxes(b: TraceBuilder, events: list[dict[str, Any]], origin: float) -> int:
    lifecycle = [
        SandboxEvent(key=e["key"], ev=Ev(e["step"]), t=e["t"] - origin, attempt=e["attempt"], reason=e["reason"],
                     attrs=e["attrs"])
        for e in _by(events, "sandbox")
    ]  # fmt: skip
    return add_spans(b, lifecycle)


def emit_pauses(b: TraceBuilder, events: list[dict[str, Any]], origin: float) -> None:
    """Admission closed by the mode's rule, and each generator's pause to receive weights."""
    for e in _by(events, "paused"):
        b.span(K.GENERATOR_PAUSED, e["t0"] - origin, e["t1"] - origin, actor="orchestrator",
               attrs=attrs_json({"reason": e["reason"]}))  # fmt: skip
    for e in _by(events, "weights"):
        b.span(K.GENERATOR_PAUSED, e["t0"] - origin, e["t1"] - origin, actor=e["role"], v_end=e["version"],
               attrs=attrs_json({"reason": "weight_sync", "bytes": e["bytes"]}))  # fmt: skip


def parse_run(path: Path) -> Trace:
    path = Path(path)
    events, sources = read_events(path)
    start = _by(events, "run_start")[0]
    origin = start["t"]
    b = TraceBuilder()
    emit_trainer(b, events, origin)
    emit_rollouts(b, events, origin)
    sandbox_spans = emit_sandboxes(b, events, origin)
    emit_pauses(b, events, origin)
    warnings = [f"engine error: {e['message']}" for e in _by(events, "error")]
    ends = _by(events, "run_end")
    partial = not ends or ends[-1]["status"] != "succeeded"
    if not ends:
        warnings.append("the engine log has no run_end event: the run was killed or is still running")
    config = start["config"]
    versions = {k: v for e in _by(events, "ready") for k, v in e.get("versions", {}).items()}
    summary_path = (path if path.is_dir() else path.parent.parent) / SUMMARY_FILENAME
    if summary_path.exists():
        sources.append(str(summary_path))
        emit_summary(b, json.loads(summary_path.read_text()))
    meta = TraceMeta(
        adapter="ref", framework=FRAMEWORK, framework_version=benchbed.__version__, mode=start["mode"],
        concurrency=start["concurrency"], samples_per_step=start["batch_size"],
        group_size=config["group_size"], sources=sources, warnings=warnings, partial=partial,
        modelled=[K.GENERATOR_PAUSED],  # the engine logs every admission and weight-sync pause
        extra={"model": config["ref"]["model"], "generators": config["ref"]["generators"],
               "device": config["ref"]["device"], "seed": config["ref"]["seed"], "versions": versions,
               "sandbox_spans": sandbox_spans, "processes": _by(events, "spawned")[0]["pids"] if _by(events, "spawned")
               else {}, "epoch_origin": origin},
    )  # fmt: skip
    trace = Trace(b.build(meta).events, meta)
    return trace.validate()
