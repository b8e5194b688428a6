"""An AReaL trial folder -> the trace. The perf tracer's `train.*` spans (rank 0) give the trainer steps and their
parts, the session tracer's records one rollout span per sample; the stats history (TensorBoard or W&B) adds AReaL's
own figures. A history alone goes through the kit's history_trace (agg rows only)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
from benchbed.adapters.areal.spans import read_trial

from benchbed.adapterkit.histories import History, history_kind
from benchbed.adapterkit.histories.history import STEP
from benchbed.adapterkit.history_trace import history_trace, read_run_history
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import NotThisFrameworkError, Trace, TraceMeta

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
RELEASE = KEYMAP.releases[-1]
PARTS = KEYMAP.mapping(RELEASE, "component")  # timeperf/<name> and train.<name> -> trainer.*
HISTORIES = ("tensorboard", "wandb")  # where a trial folder keeps its stats (stats_logger.tensorboard.path; wandb dir)


def parse_history(history: History) -> Trace:
    """A stats history alone: AReaL's global_step 0.. as steps 1.., the step as the sum of its timeperf/* scopes."""
    timed = [k for k in history.keys if PARTS.get(k)]
    if not timed:
        raise NotThisFrameworkError(f"not an AReaL history: {history.source.uri} logs no timeperf/* key")
    frame = history.frame.copy()
    frame[STEP] = frame[STEP] + 1
    frame["timeperf/step"] = frame[timed].sum(axis=1, min_count=1)
    return history_trace(dataclasses.replace(history, frame=frame), KEYMAP, adapter="areal", mode="async")


def parse_path(path: Path) -> Trace:
    perf = sorted(path.glob("perf_tracer/**/traces-r*.jsonl"), key=lambda p: (p.parent.name != "master", p.name))
    if not perf:
        return parse_history(read_run_history(path, "areal", HISTORIES))
    warnings: list[str] = []
    builder, fields = read_trial(path, perf[0], PARTS, warnings)
    meta = TraceMeta(
        adapter="areal", framework="areal", framework_version=RELEASE, mode="async", warnings=warnings, **fields
    )
    trace = builder.build(meta)
    if any(history_kind(path / n) for n in HISTORIES):  # AReaL's own figures beside the spans
        stats = parse_history(read_run_history(path, "areal", HISTORIES)).events
        stats = stats[~stats["key"].astype(str).str.startswith("trainer.")]
        trace = Trace(pd.concat([trace.events, stats], ignore_index=True), meta)
    return trace
