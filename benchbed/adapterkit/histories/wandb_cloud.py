"""W&B cloud runs, `wandb://ENTITY/PROJECT/RUN_ID`, through wandb's public API (`wandb.Api`): the history is fetched
in pages (`Run.scan_history`), with progress; the API key is wandb's own concern (WANDB_API_KEY or `wandb login`)
and never reaches the History. The public API's rows carry wandb's own counter as `_step`; a run that named its step
(`define_metric("*", step_metric=KEY)`, as prime-rl does) is read on that key, as its offline record log is."""

from __future__ import annotations

import re
from typing import Any

from benchbed.adapterkit.histories.history import History, HistoryError, HistorySource, Progress
from benchbed.adapterkit.histories.row_blocks import RowBlocks
from benchbed.adapterkit.histories.wandb_file import INSTALL_HINT, add_api_row, history_frame, no_rows_message

PAGE_SIZE = 1000
_URI = re.compile(r"^wandb://(?P<entity>[^/\s]+)/(?P<project>[^/\s]+)/(?:runs/)?(?P<run>[^/\s#?]+)/?$")


def parse_uri(uri: str) -> tuple[str, str, str]:
    """(entity, project, run id) of `wandb://ENTITY/PROJECT/RUN_ID`; HistoryError for another shape."""
    match = _URI.match(uri)
    if match is None:
        raise HistoryError(f"{uri}: expected wandb://ENTITY/PROJECT/RUN_ID")
    return match.group("entity"), match.group("project"), match.group("run")


def read_wandb_cloud(uri: str, progress: Progress | None = None, timeout_s: float = 30.0, api: Any = None) -> History:
    """The history of a W&B cloud run. `api` stands in for `wandb.Api(timeout=timeout_s)` (tests pass a fake with
    the same `run(path)` / `scan_history(page_size=...)` interface)."""
    entity, project, run_id = parse_uri(uri)
    if api is None:
        try:
            import wandb
        except ImportError as exc:
            raise HistoryError(f"reading a W&B run needs the wandb package: {INSTALL_HINT}") from exc
        try:
            api = wandb.Api(timeout=int(timeout_s))
        except Exception as exc:  # no API key, no network: wandb's own UsageError / CommError
            raise HistoryError(f"{uri}: the W&B API cannot be used here ({_first_line(exc)})") from None
    try:
        run = api.run(f"{entity}/{project}/{run_id}")
        total = _total_rows(run)
        rows = RowBlocks()  # each page's rows into blocks of doubles as they arrive, no dict kept per row
        for row in run.scan_history(page_size=PAGE_SIZE):
            add_api_row(rows, row)
            if progress is not None and rows.rows % PAGE_SIZE == 0:
                progress(rows.rows, total)
        if progress is not None:
            progress(rows.rows, total)
        config = {k: v for k, v in dict(run.config).items() if not k.startswith("_")}
        step_key = defined_step(run.rawconfig, set(rows.keys()))
        summary = {k: v for k, v in dict(run.summary).items() if not k.startswith("_")}
        name = str(getattr(run, "name", "") or "")
    except HistoryError:
        raise
    except Exception as exc:  # wandb's CommError (missing run, no answer within the timeout, refused key)
        raise HistoryError(f"{uri}: W&B run not read within {timeout_s:g} s per request ({_first_line(exc)})") from None
    if not rows.rows:
        raise HistoryError(no_rows_message(uri, summary))
    source = HistorySource("wandb", run_id, f"wandb://{entity}/{project}/{run_id}", project=project, name=name)
    return History(source, history_frame(rows, step_key), config=config, summary=summary)


def defined_step(rawconfig: Any, keys: set[str]) -> str:
    """The key a run named its step for every key, from the metric definitions wandb keeps in its config (`_wandb.m`,
    each a MetricRecord by field number as wandb-core's runmetric package encodes it: "1" name, "2" glob name, "5" the
    1-based index of its step metric): the glob "*" itself where the server expands globs, or the one step metric
    every logged key is defined with where the SDK expanded the glob; `_step` (wandb's counter) otherwise."""
    internal = rawconfig.get("_wandb") if isinstance(rawconfig, dict) else None
    metrics = internal.get("m") if isinstance(internal, dict) else None
    entries: list[Any] = metrics if isinstance(metrics, list) else []

    def step_of(entry: Any) -> str | None:
        index = entry.get("5") if isinstance(entry, dict) else None
        target = entries[index - 1] if isinstance(index, int) and 1 <= index <= len(entries) else None
        return (str(target.get("1") or "") or None) if isinstance(target, dict) else None

    for entry in entries:
        if isinstance(entry, dict) and entry.get("2") == "*" and (step := step_of(entry)):
            return step
    named = {str(e["1"]): step_of(e) for e in entries if isinstance(e, dict) and e.get("1")}
    logged = {k for k in keys if not k.startswith("_")}
    for step in {s for s in named.values() if s in logged}:
        if all(named.get(k) == step for k in logged - {step}):
            return step
    return "_step"


def _total_rows(run: Any) -> int | None:
    last = getattr(run, "lastHistoryStep", None)
    return int(last) + 1 if isinstance(last, int) and last >= 0 else None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__
