"""MLflow runs read through mlflow's own client: a file store (`mlruns/`), a SQLite store, or a tracking server.
Each metric's full history becomes one column; rows are the union of the logged steps. A database store (SQLite and
the other SQL backends) is read through mlflow's own engine and metrics table as columns, in the order and with the
NaN convention of `get_metric_history`, without building one mlflow `Metric` object per point; a file store or a
server through `get_metric_history`."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from benchbed.adapterkit.gpu import match_gpu_key, samples_frame
from benchbed.adapterkit.histories.history import (
    History,
    HistoryError,
    HistorySource,
    Progress,
    frame_from_matrix,
    safe_uri,
)

INSTALL_HINT = "pip install 'benchbed[mlflow]'"
_RUN_ID = re.compile(r"(?:^|/)runs/([0-9a-fA-F]{32}|[\w-]{8,64})/?$")
_REMOTE = ("http", "https")
SYSTEM_PREFIX = "system/"  # mlflow's system metrics: sampled on their own counter, not at the run's steps
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]  # one key's (steps, timestamps in ms, values)


def split_location(location: str | Path) -> tuple[str, str | None]:
    """(tracking URI, run id or None) of an MLflow location: a path, a store URI with an optional `#RUN_ID`, the
    MLflow UI's address of a run (`http://HOST/#/experiments/E/runs/RUN_ID`), `mlflow://HOST:PORT/RUN_ID` or
    `runs:/RUN_ID` (the store named by MLFLOW_TRACKING_URI)."""
    if isinstance(location, Path) or "://" not in str(location) and not str(location).startswith("runs:"):
        path = Path(location).resolve()
        if path.is_file():
            return f"sqlite:///{path}", None
        if (path / "meta.yaml").is_file() and (path / "metrics").is_dir():
            return path.parents[1].as_uri(), path.name
        return path.as_uri(), None
    text = str(location)
    if text.startswith("runs:/"):
        store = os.environ.get("MLFLOW_TRACKING_URI")
        if not store:
            raise HistoryError(f"{text}: a runs:/ URI needs MLFLOW_TRACKING_URI to name the tracking store")
        return store, text.removeprefix("runs:/").strip("/").split("/")[0]
    parts = urlsplit(text)
    base, fragment = text.split("#", 1) if "#" in text else (text, "")
    run_id = None
    if fragment:
        match = _RUN_ID.search(fragment)
        run_id = match.group(1) if match else fragment.strip("/")
    if parts.scheme == "mlflow":
        match = _RUN_ID.search(parts.path) or re.search(r"^/([\w-]{8,64})/?$", parts.path)
        run_id = run_id or (match.group(1) if match else None)
        base = f"http://{parts.netloc}"
    return base.rstrip("/") if parts.scheme in _REMOTE + ("mlflow",) else base, run_id


@contextlib.contextmanager
def _request_limits(timeout_s: float) -> Iterator[None]:
    """Bound each request to a tracking server (mlflow's defaults: 120 s and 7 retries)."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                                            "MLFLOW_ALLOW_FILE_STORE")}  # fmt: skip
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, int(timeout_s)))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # reading an existing mlruns/ store (mlflow 3.x refuses by default)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def read_mlflow(location: str | Path, progress: Progress | None = None, timeout_s: float = 30.0) -> History:
    """The history of one MLflow run; HistoryError (one line) for a missing run or store, or a server that does not
    answer within `timeout_s`."""
    try:
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise HistoryError(f"reading an MLflow run needs the mlflow package: {INSTALL_HINT}") from exc
    tracking_uri, run_id = split_location(location)
    shown = safe_uri(tracking_uri)
    secret = urlsplit(tracking_uri).password if "://" in tracking_uri else None
    _check_local_store(tracking_uri, shown)
    with _request_limits(timeout_s):
        client = MlflowClient(tracking_uri=tracking_uri)
        try:
            run_id = run_id or _only_run(client, shown)
            run = client.get_run(run_id)
            keys = sorted(k for k in run.data.metrics if not k.startswith(SYSTEM_PREFIX))
            gpu_keys = sorted(k for k in run.data.metrics if k.startswith(SYSTEM_PREFIX) and match_gpu_key(k))
            series = _histories(client, run_id, keys + gpu_keys, progress)
        except HistoryError:
            raise
        except Exception as exc:  # mlflow's own errors; the HTTP client's connection errors and timeouts
            remote = urlsplit(tracking_uri).scheme in _REMOTE
            unreachable = not isinstance(exc, MlflowException) or "failed with exception" in str(exc)
            if remote and unreachable:
                what = f"MLflow tracking store did not answer within {timeout_s:g} s"
            elif unreachable:
                what = "MLflow tracking store could not be read"
            else:
                what = f"MLflow run {run_id or '?'}"
            raise HistoryError(_clean(f"{shown}: {what}: {_first_line(exc)}", secret)) from None
    if not keys:
        raise HistoryError(f"{shown}: MLflow run {run_id} logged no metrics (params only): no per-step figures")
    info = run.info
    source = HistorySource("mlflow", run_id, f"{shown}#{run_id}", project=str(info.experiment_id),
                           name=str(info.run_name or ""))  # fmt: skip
    local = _local_store(tracking_uri)
    files = _store_files(local, tracking_uri, info.experiment_id, run_id) if local else []
    gpu = [series.pop(k) for k in gpu_keys]
    system = samples_frame(
        [t / 1000.0 for _, times, _ in gpu for t in times],
        [k for k, (_, times, _) in zip(gpu_keys, gpu, strict=True) for _ in times],
        [v for _, _, values in gpu for v in values],
    )
    started = info.start_time / 1000.0 if info.start_time else float("nan")
    return History(source, _frame(series), config=unflatten(dict(run.data.params)), files=files, system=system,
                   started=started)  # fmt: skip


MLFLOW_TABLES = {"experiments", "runs", "metrics", "latest_metrics", "params"}


def _check_local_store(uri: str, shown: str) -> None:
    """HistoryError unless a local store is there and is mlflow's: mlflow's client creates a store that is missing and
    adds its tables to any SQLite database it is given, and reading must create and alter nothing."""
    path = _local_store(uri)
    if path is None:
        return
    if uri.startswith("file:"):
        if not path.is_dir():
            raise HistoryError(f"{shown}: no MLflow file store there (no such directory)")
        return
    if not path.is_file():
        raise HistoryError(f"{shown}: no MLflow store there (no such file)")
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{shown}: not an MLflow SQLite store ({exc})") from None
    if missing := sorted(MLFLOW_TABLES - tables):
        raise HistoryError(f"{shown}: not an MLflow SQLite store (no {', '.join(missing)} table)")


def _only_run(client: Any, shown: str) -> str:
    """The run of a store that holds one; HistoryError listing them when it holds several or none."""
    experiments = client.search_experiments()
    runs = client.search_runs([e.experiment_id for e in experiments], max_results=50) if experiments else []
    if len(runs) == 1:
        return runs[0].info.run_id
    if not runs:
        raise HistoryError(f"{shown}: the MLflow store holds no runs")
    ids = ", ".join(r.info.run_id for r in runs[:5]) + (" ..." if len(runs) > 5 else "")
    raise HistoryError(f"{shown}: the MLflow store holds {len(runs)} runs; name one as {shown}#RUN_ID: {ids}")


def _histories(client: Any, run_id: str, keys: list[str], progress: Progress | None) -> dict[str, Arrays]:
    """Each key's (steps, timestamps in ms, values), one key at a time: memory is the history's."""
    store = _sql_store(client)
    series = {}
    if store is None:
        for i, key in enumerate(keys):
            series[key] = _arrays(client.get_metric_history(run_id, key))
            if progress is not None:
                progress(i + 1, len(keys))
        return series
    from mlflow.store.tracking.dbmodels.models import SqlMetric
    from sqlalchemy import select

    c = SqlMetric.__table__.c
    with store.engine.connect() as connection:
        for i, key in enumerate(keys):  # get_metric_history's filter and order, as rows of plain numbers
            query = select(c.step, c.timestamp, c.value, c.is_nan).where(c.run_uuid == run_id, c.key == key)
            series[key] = _columns(connection.execute(query.order_by(c.timestamp, c.step, c.value)).all())
            if progress is not None:
                progress(i + 1, len(keys))
    return series


def _sql_store(client: Any) -> Any:
    """The client's store when it is mlflow's SQLAlchemy store (SQLite, PostgreSQL, MySQL...), else None. Its module
    is only looked up, not imported: a store of that class has loaded it. `_tracking_client.store` is not public in
    mlflow (tested with 3.17): where a newer mlflow moves it, the reading falls back to `get_metric_history`."""
    module = sys.modules.get("mlflow.store.tracking.sqlalchemy_store")
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if module is None or not isinstance(store, module.SqlAlchemyStore) or not hasattr(store, "engine"):
        return None
    return store


def _columns(rows: list[Any]) -> Arrays:
    """(steps, timestamps in ms, values) of (step, timestamp, value, is_nan) rows; a NaN is stored as is_nan with a
    value of 0, and read back as NaN, as `SqlMetric.to_mlflow_entity` does."""
    if not rows:
        return np.empty(0, np.int64), np.empty(0), np.empty(0)
    steps, times, values, nans = zip(*rows, strict=True)
    out = np.array(values, dtype=float)
    out[np.array(nans, dtype=bool)] = np.nan
    return np.array(steps, dtype=np.int64), np.array(times, dtype=float), out


def _arrays(metrics: list[Any]) -> Arrays:
    """(steps, timestamps in ms, values) of one key's Metric objects."""
    n = len(metrics)
    steps = np.fromiter((m.step for m in metrics), dtype=np.int64, count=n)
    times = np.fromiter((m.timestamp for m in metrics), dtype=float, count=n)
    return steps, times, np.fromiter((m.value for m in metrics), dtype=float, count=n)


def _frame(arrays: dict[str, Arrays]) -> Any:
    """Columns by step: the union of every key's steps; a step logged twice keeps its last value; the row's wall time
    is the latest timestamp among its values. Each key's arrays are taken out of `arrays` as its column is filled
    (memory: the matrix and the arrays not yet read), and the frame holds the matrix without a copy."""
    all_steps = np.unique(np.concatenate([a[0] for a in arrays.values()])) if arrays else np.empty(0, np.int64)
    wall = np.full(len(all_steps), np.nan)
    keys = list(arrays)
    matrix = np.full((len(keys), len(all_steps)), np.nan)  # key-major: each column contiguous, as a frame holds it
    for row, key in zip(matrix, keys, strict=True):
        steps, times, values = arrays.pop(key)
        at = np.searchsorted(all_steps, steps)
        row[at] = values  # numpy assigns in order: the last of a repeated step wins
        wall[at] = np.fmax(wall[at], times / 1000.0)
    return frame_from_matrix(all_steps, wall, keys, matrix.T)


def unflatten(params: dict[str, str]) -> dict[str, Any]:
    """MLflow params (strings under `a/b/c` keys, as verl flattens its config) as a nested dict of values."""
    out: dict[str, Any] = {}
    for key, text in sorted(params.items()):
        node = out
        parts = key.split("/")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = _value(text)
    return out


def _value(text: str) -> Any:
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    if text in ("None", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _local_store(uri: str) -> Path | None:
    """The store's path on this machine: `sqlite:///REL.db` is relative and `sqlite:////ABS.db` absolute (SQLAlchemy's
    forms; urlsplit would give `//ABS.db`, which no other path is relative to), `file:///ABS` a folder."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///"))
    return Path(urlsplit(uri).path) if uri.startswith("file:") else None


def _store_files(root: Path, uri: str, experiment_id: str, run_id: str) -> list[Path]:
    """The local files that hold the run: its folder in a file store, or the SQLite database."""
    if uri.startswith("sqlite:"):
        return [root] if root.is_file() else []
    folder = root / str(experiment_id) / run_id
    return [p for p in sorted(folder.rglob("*")) if p.is_file()] if folder.is_dir() else []


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


_USERINFO = re.compile(r"(?<=//)[^/@\s]+@")


def _clean(text: str, secret: str | None) -> str:
    """A message without the URL's user and password (mlflow's own messages repeat the URL it was given)."""
    text = _USERINFO.sub("", text)
    return text.replace(secret, "***") if secret else text
