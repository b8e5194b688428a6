"""A run's history as a tracker keeps it: per-step rows of key -> number, with the step and (where the tracker
records one) the wall-clock time, plus where it came from. Every history source yields this one shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pandas as pd

from benchbed.adapterkit.gpu import empty_samples
from benchbed.errors import BenchbedError
from benchbed.secrets import is_secret_name

STEP, WALL_TIME = "step", "wall_time"
PART = "part"  # optional column: which file of a multi-file history (TensorBoard: one per process) a row came from
RESERVED = (STEP, WALL_TIME, PART)


Progress = Callable[[int, int | None], None]  # (rows read so far, total rows or None)


def safe_uri(uri: str) -> str:
    """The URI without a password or user in its authority and without secret-named query parameters."""
    parts = urlsplit(uri)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not (parts.username or parts.password or any(is_secret_name(k) for k, _ in pairs)):
        return uri
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    query = urlencode([(k, v) for k, v in pairs if not is_secret_name(k)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class HistoryError(BenchbedError):
    """A history cannot be opened or read: missing run, unreachable server, unreadable file (one line, exit 2)."""


@dataclass(frozen=True)
class HistorySource:
    """Where a history came from, for the trace's metadata; `uri` never holds a credential."""

    tracker: str  # "wandb", "mlflow", "tensorboard", "jsonl"
    run_id: str
    uri: str
    project: str = ""
    name: str = ""

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


@dataclass
class History:
    """One run's per-step figures. `frame` has `step` (int), `wall_time` (epoch seconds, NaN where not recorded),
    optionally `part`, and one float column per key (NaN where the key was not logged in that row)."""

    source: HistorySource
    frame: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)  # the run's config (W&B config, MLflow params unflattened)
    summary: dict[str, Any] = field(default_factory=dict)  # final values the tracker keeps beside the history
    packages: dict[str, str] = field(default_factory=dict)  # name -> version the run recorded (W&B requirements.txt)
    files: list[Path] = field(default_factory=list)  # local files read (copied into the store by ingest)
    warnings: list[str] = field(default_factory=list)
    partial: bool = False  # the history was cut short (damaged file); rows before the damage are kept
    started: float = math.nan  # epoch seconds at which the run started, where the tracker records it
    command: list[str] = field(default_factory=list)  # the run's command-line arguments, where the tracker keeps them
    texts: dict[str, Any] = field(default_factory=dict)  # free text kept beside the figures (TensorBoard text, hparams)
    # GPU samples the tracker took beside the steps (W&B and MLflow system metrics): wall_time, key, value
    system: pd.DataFrame = field(default_factory=empty_samples)

    @property
    def keys(self) -> list[str]:
        """The metric keys, in column order."""
        return [c for c in self.frame.columns if c not in RESERVED]

    def rows(self) -> Iterator[tuple[int, float | None, dict[str, float]]]:
        """(step, wall time or None, {key: value}) per row, keys not logged in that row left out."""
        keys = self.keys
        steps = self.frame[STEP].to_numpy()
        times = self.frame[WALL_TIME].to_numpy(dtype=float)
        values = self.frame[keys].to_numpy(dtype=float) if keys else np.empty((len(steps), 0))
        for i in range(len(steps)):
            row = values[i]
            present = ~np.isnan(row)
            wall = float(times[i])
            yield (
                int(steps[i]),
                None if math.isnan(wall) else wall,
                {k: float(v) for k, v, ok in zip(keys, row, present, strict=True) if ok},
            )


def frame_from_rows(
    rows: Iterable[tuple[int, float | None, Mapping[str, float]]], parts: list[str] | None = None
) -> pd.DataFrame:
    """A history frame from (step, wall_time, {key: value}) rows, keys in first-seen order."""
    rows = list(rows)
    values = pd.DataFrame.from_records([dict(r[2]) for r in rows], index=range(len(rows)))
    steps = [int(r[0]) for r in rows]
    times = [math.nan if r[1] is None else float(r[1]) for r in rows]
    return frame_from_columns(steps, times, {k: values[k].to_numpy(dtype=float) for k in values.columns}, parts)


def frame_from_columns(
    steps: list[int] | np.ndarray,
    times: list[float] | np.ndarray,
    columns: Mapping[str, Any],
    parts: list[str] | None = None,
) -> pd.DataFrame:
    """A history frame from equal-length columns (one per key); one concat, no per-column inserts."""
    head: dict[str, Any] = {STEP: np.asarray(steps, dtype=np.int64), WALL_TIME: np.asarray(times, dtype=float)}
    if parts is not None:
        head[PART] = parts
    body = {k: np.asarray(v, dtype=float) for k, v in columns.items() if k not in RESERVED}
    frame = pd.DataFrame(head)
    if body:
        frame = pd.concat([frame, pd.DataFrame(body)], axis=1)
    return frame
