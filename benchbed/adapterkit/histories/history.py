"""A run's history as a tracker keeps it: per-step rows of key -> number, with the step and (where the tracker
records one) the wall-clock time, plus where it came from. Every history source yields this one shape."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pandas as pd

from benchbed.adapterkit.gpu import empty_samples
from benchbed.adapterkit.histories.row_blocks import RowBlocks
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
        at = [i for i, c in enumerate(self.frame.columns) if c not in RESERVED]  # by position: no lookup by name
        keys = [self.frame.columns[i] for i in at]
        steps = self.frame[STEP].to_numpy()
        times = self.frame[WALL_TIME].to_numpy(dtype=float)
        values = self.frame.iloc[:, at].to_numpy(dtype=float) if keys else np.empty((len(steps), 0))
        for i in range(len(steps)):
            wall = float(times[i])
            yield (
                int(steps[i]),
                None if math.isnan(wall) else wall,
                {k: v for k, v in zip(keys, values[i].tolist(), strict=True) if not math.isnan(v)},
            )


def frame_from_rows(
    rows: Iterable[tuple[int, float | None, Mapping[str, float]]], parts: list[str] | None = None
) -> pd.DataFrame:
    """A history frame from (step, wall_time, {key: value}) rows, keys in first-seen order: each row written into
    blocks of doubles as it comes (no dict or frame kept per row), the frame built around the one matrix."""
    blocks = RowBlocks()
    steps, times = array("q"), array("d")
    for step, wall, values in rows:
        row = blocks.row()
        steps.append(int(step))
        times.append(math.nan if wall is None else float(wall))
        for key, value in values.items():
            blocks.set(row, key, value)
    return frame_from_matrix(steps, times, blocks.keys(), blocks.matrix(), parts)


_MAX_SPLITS = 32  # pandas warns of a fragmented frame past 100 blocks


def frame_from_matrix(
    steps: Sequence[int] | np.ndarray,
    times: Sequence[float] | np.ndarray,
    keys: list[str],
    matrix: np.ndarray,
    parts: list[str] | None = None,
    left_out: Collection[str] = (),
) -> pd.DataFrame:
    """A history frame around a rows × keys matrix of doubles, which it holds without a copy; the keys in `left_out`,
    and a key named like a reserved column, are dropped: each `del` splits the matrix's block into views (`drop`
    would copy it), unless that would leave more than `_MAX_SPLITS` pieces, when the kept columns are copied once."""
    dropped = [i for i, key in enumerate(keys) if key in RESERVED or key in left_out]
    if len(dropped) > _MAX_SPLITS:
        left = set(dropped)
        kept = [i for i in range(len(keys)) if i not in left]
        matrix, keys, dropped = matrix[:, kept], [keys[i] for i in kept], []
    frame = pd.DataFrame(matrix, columns=keys, copy=False)
    for i in dropped:
        del frame[keys[i]]
    frame.insert(0, STEP, np.asarray(steps, dtype=np.int64))
    frame.insert(1, WALL_TIME, np.asarray(times, dtype=float))
    if parts is not None:
        frame.insert(2, PART, parts)
    return frame
