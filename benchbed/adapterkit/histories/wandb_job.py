"""Several W&B runs of one job read as one history: frameworks that log from several processes leave one offline run
per process (slime's rollout manager and trainer resume the driver's run id; prime-rl's trainer and orchestrator
each open their own run under the job's name). Their rows are merged by step, each row keeping its run as `part`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchbed.adapterkit.histories.history import PART, STEP, WALL_TIME, History, HistoryError, HistorySource
from benchbed.adapterkit.histories.wandb_file import find_wandb_file, no_rows_message, read_wandb_file

MAX_PROCESSES = 16  # a folder with more runs than this is a project's history of runs, not one job's processes


def read_wandb_job(folder: Path, run_dirs: list[Path]) -> History:
    """The runs under `folder` as one history when they are one job's processes; HistoryError naming them when not."""
    shown = ", ".join(p.name for p in run_dirs[:5]) + (" ..." if len(run_dirs) > 5 else "")
    refusal = f"{folder}: holds {len(run_dirs)} W&B runs; pass one run directory: {shown}"
    if len(run_dirs) > MAX_PROCESSES:
        raise HistoryError(refusal)
    parts = [read_wandb_file(find_wandb_file(d), allow_empty=True) for d in run_dirs]  # type: ignore[arg-type]
    why_not = _not_one_job(parts)
    if why_not:
        raise HistoryError(f"{refusal} (not one job's processes: {why_not})")
    return merge_parts(folder, [d.name for d in run_dirs], parts)


def _not_one_job(parts: list[History]) -> str:
    """Why these runs are not the processes of one job ('' when they are): each started at its own moment, and they
    share a run id, or else a project and name with time spans that overlap."""
    starts = [p.started for p in parts]
    if len(set(starts)) < len(starts):
        return "two of them started at the same moment, as copies of one run do"
    if len({p.source.run_id for p in parts}) == 1:
        return ""
    if len({(p.source.project, p.source.name) for p in parts}) > 1:
        return "their run ids differ, and so do their projects or names"
    spans = sorted((float(p.frame[WALL_TIME].min()), float(p.frame[WALL_TIME].max())) for p in parts if len(p.frame))
    if len(spans) < len(parts) or any(math.isnan(a) for span in spans for a in span):
        return "their run ids differ and some have no timed rows"
    end = spans[0][1]
    for start, stop in spans[1:]:
        if start > end:
            return "their run ids differ and their time spans do not overlap"
        end = max(end, stop)
    return ""


def merge_parts(folder: Path, names: list[str], parts: list[History]) -> History:
    """One history of the parts' rows, ordered by step, then wall time, then run (a part's own order kept)."""
    frames = [p.frame.assign(**{PART: name}) for name, p in zip(names, parts, strict=True) if len(p.frame)]
    if not frames:
        raise HistoryError(no_rows_message(str(folder), _merged([p.summary for p in parts])))
    frame = pd.concat(frames, ignore_index=True, sort=False)
    order = np.lexsort((np.arange(len(frame)), frame[WALL_TIME].fillna(np.inf).to_numpy(), frame[STEP].to_numpy()))
    frame = frame.iloc[order].reset_index(drop=True)
    head = [STEP, WALL_TIME, PART]
    frame = frame[head + [c for c in frame.columns if c not in head]]
    ids = list(dict.fromkeys(p.source.run_id for p in parts))
    first = parts[0].source
    return History(
        source=HistorySource("wandb", "+".join(ids), str(folder.resolve()), project=first.project, name=first.name),
        frame=frame,
        config=_merged([p.config for p in parts]),
        summary=_merged([p.summary for p in parts]),
        packages=_merged([p.packages for p in parts]),
        files=[f for p in parts for f in p.files],
        warnings=[w for p in parts for w in p.warnings],
        partial=any(p.partial for p in parts),
        started=min((p.started for p in parts if not math.isnan(p.started)), default=math.nan),
        command=[a for p in parts for a in p.command],
        system=pd.concat([p.system for p in parts], ignore_index=True),  # the same index in two parts: one GPU
    )


def _merged(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Nested dicts merged, the first one to set a value keeping it."""
    out: dict[str, Any] = {}
    for d in dicts:
        for key, value in d.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = _merged([out[key], value])
            else:
                out.setdefault(key, value)
    return out
