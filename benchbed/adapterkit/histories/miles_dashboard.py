"""Miles' dashboard tracker (`--use-miles-dashboard`, radixark/miles 31f1ca9 miles/dashboard/store.py): its
collector appends one MetricsRecord `{ts, step_key, step, metrics}` line per `tracking.log` call to
`{dump_details}/dashboard/metrics.jsonl` (a history: one row per call), and one PhaseEvent `{name, t0, t1, node, gpus,
rank, role}` per Timer start (t1 = -1) and end to `phases/YYYYMMDD_HH.jsonl` (the hour it ended; a flat v1
`phases.jsonl` too); `meta.json` holds the run's start and a snapshot of its arguments."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson

from benchbed.adapterkit.histories.history import History, HistorySource, frame_from_rows
from benchbed.adapterkit.lines import JsonLines
from benchbed.errors import NotThisFrameworkError

METRICS = "metrics.jsonl"
OPEN_T1 = -1.0  # PhaseEvent.OPEN_T1: the interval's start, written before it ended
Phase = tuple[str, float, float, str, dict[str, Any]]  # name, t0, t1 (epoch s), role, {rank, node, gpus}


def read_dashboard_metrics(folder: Path, warnings: list[str]) -> History:
    """One history row per MetricsRecord line ({ts, step_key, step, metrics}); meta.json's args are the config."""
    path, rows = folder / METRICS, []
    lines = JsonLines(path, warnings)
    for number, record in lines:
        metrics, ts = record.get("metrics"), record.get("ts")
        if not isinstance(metrics, dict) or not isinstance(ts, int | float):
            warnings.append(
                f'{path}:{number}: not a MetricsRecord; expected {{"ts": T, "step": N, "metrics": {{...}}}}'
            )
            continue
        values = {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        rows.append((record["step"] if isinstance(record.get("step"), int) else -1, float(ts), values))
    if not rows:
        raise NotThisFrameworkError(f"not a Miles run: {path} holds no MetricsRecord line")
    meta = _json(folder / "meta.json", warnings)
    started = meta.get("start_ts")
    return History(HistorySource("jsonl", folder.parent.name, str(path.resolve())), frame_from_rows(rows),
                   config=meta.get("args") or {}, files=[path], warnings=warnings, partial=lines.truncated,
                   started=float(started) if isinstance(started, int | float) else math.nan)  # fmt: skip


def read_dashboard_phases(folder: Path, warnings: list[str]) -> list[Phase]:
    """(name, t0, t1, role, {rank, node, gpus}) of every closed interval in the hourly and the flat (v1) files, in
    file order; an interval whose start alone was written is a warning."""
    closed: list[Phase] = []
    opened: dict[tuple[Any, ...], str] = {}  # (name, t0, role, rank, node) -> where its start was, '' once closed
    for path in [*sorted((folder / "phases").glob("*.jsonl")), folder / "phases.jsonl"]:
        for number, e in JsonLines(path, warnings) if path.is_file() else ():
            if not (isinstance(e.get("t0"), int | float) and isinstance(e.get("t1"), int | float) and e.get("name")):
                warnings.append(f"{path}:{number}: not a PhaseEvent; expected {{name, t0, t1, node, gpus, rank, role}}")
                continue
            ident = (str(e["name"]), float(e["t0"]), str(e.get("role", "")), e.get("rank"), e.get("node"))
            if e["t1"] == OPEN_T1:
                opened.setdefault(ident, f"{path}:{number}")
                continue
            opened[ident] = ""
            closed.append(
                (ident[0], ident[1], float(e["t1"]), ident[2], {k: e.get(k) for k in ("rank", "node", "gpus")})
            )
    warnings.extend(f"{at}: phase {i[0]!r} of rank {i[3]} never ended; left out" for i, at in opened.items() if at)
    return closed


def _json(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes()) if path.is_file() else {}
    except orjson.JSONDecodeError as exc:
        warnings.append(f"{path}: not JSON ({exc}); its run arguments are unknown")
        return {}
    return data if isinstance(data, dict) else {}
