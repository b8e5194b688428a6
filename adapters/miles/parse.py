"""A Miles dashboard folder or W&B history -> the trace: slime's per-rollout dicts through slime's parser (Miles logs
them through the same calls), the fully async keys through Miles' key map, and each closed PhaseEvent (a Timer
interval of one rank) as a `native.phase/<name>` span."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from benchbed.adapters.miles.discover import DASHBOARD, METRICS
from benchbed.adapters.slime.detect import detect_mode
from benchbed.adapters.slime.emit import build_trace
from benchbed.adapters.slime.history import collect_history

from benchbed.adapterkit.histories import History
from benchbed.adapterkit.histories.miles_dashboard import read_dashboard_metrics, read_dashboard_phases
from benchbed.adapterkit.history_trace import with_gpu_samples
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.api import NotThisFrameworkError, Trace, TraceBuilder, attrs_json

KEYMAP = load_keymap(Path(__file__).with_name("keymap.toml"))
RELEASE = KEYMAP.releases[-1]


def parse_path(path: Path) -> Trace:
    """The dump-details folder, its `dashboard/` folder or the metrics stream in it."""
    folder = next((f for f in (path, path / DASHBOARD, path.parent) if (f / METRICS).is_file()), None)
    if folder is None:
        raise NotThisFrameworkError(f"not a Miles run: {path} holds no {DASHBOARD}/{METRICS} (--use-miles-dashboard)")
    warnings: list[str] = []
    trace = parse_history(read_dashboard_metrics(folder, warnings))
    origin = trace.meta.extra["run_start_epoch_s"]
    phases = TraceBuilder()
    for name, t0, t1, role, attrs in read_dashboard_phases(folder, warnings):
        actor = "trainer" if role == "train" else "generator"
        phases.span(f"native.phase/{name}", t0 - origin, t1 - origin, actor=actor, attrs=attrs_json(attrs))
    trace.meta.warnings.extend(warnings)
    return Trace(pd.concat([trace.events, phases.build(trace.meta).events], ignore_index=True), trace.meta).validate()


def parse_history(history: History) -> Trace:
    """slime's trace of the history, its loop fully async where the rollout dicts carry Miles' buffer keys, with the
    framework.* rows of Miles' key map (rollout k is trained by step k + 1)."""
    c = collect_history(history)
    identify = KEYMAP.identifier()
    c.fully_async_ids |= {rid for rid, p in c.rollout_perf.items() if any(identify.match(k) for k in p.values)}
    detected = detect_mode(c)
    if c.fully_async_ids:
        detected.evidence["mode"] = "rollout/fully_async/* keys (the data buffer of --fully-async)"
    trace = build_trace(c, detected)
    rows = TraceBuilder()
    for entry in KEYMAP.at(RELEASE, "framework"):
        for rid, perf in sorted(c.rollout_perf.items()):
            value = perf.values.get(entry.native)
            if isinstance(value, int | float) and math.isfinite(value):
                rows.agg(entry.canonical, rid + 1, float(value), actor="generator")
    meta = trace.meta.model_copy(update={"adapter": "miles", "framework": "miles", "framework_version": RELEASE})
    meta.extra |= {"history": history.source.as_dict(), "pinned_commits": {RELEASE: KEYMAP.facts(RELEASE)["commit"]},
                   "extends": "slime"}  # fmt: skip
    merged = Trace(pd.concat([trace.events, rows.build(meta).events], ignore_index=True), meta)
    return with_gpu_samples(merged, history).validate()
