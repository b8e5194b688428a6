"""W&B cloud runs through wandb.Api. The cloud cannot be reached here: a fake with wandb.Api's interface
(`Api.run(path)`, `Run.scan_history(page_size=...)`, `config`, `summary`, `lastHistoryStep`, `name`) serves rows
as the public API returns them (dicts with `_step`, `_timestamp`); the live test runs when credentials are set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import HistoryError, open_history
from benchbed.adapterkit.histories.wandb_cloud import read_wandb_cloud

FIXTURE = Path(__file__).parents[1] / "fixtures" / "histories" / "verl" / "verl-0.9.1-v1_sync" / "wandb"


class FakeRun:
    def __init__(self, rows: list[dict[str, Any]], config: dict[str, Any], summary: dict[str, Any]) -> None:
        self.rows, self.config, self.summary, self.name = rows, config, summary, "fake"
        self.lastHistoryStep = rows[-1]["_step"] if rows else -1
        self.pages: list[int] = []

    def scan_history(self, page_size: int = 1000) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self.rows), page_size):
            self.pages.append(start)
            yield from self.rows[start : start + page_size]


class FakeApi:
    def __init__(self, runs: dict[str, FakeRun]) -> None:
        self.runs = runs

    def run(self, path: str) -> FakeRun:
        if path not in self.runs:
            raise ValueError(f"Could not find run {path}")  # wandb raises CommError with this text
        return self.runs[path]


def _rows_of(location: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    pytest.importorskip("wandb")
    history = open_history(location)
    rows = [{"_step": s, "_timestamp": t, **values} for s, t, values in history.rows()]
    return rows, history.config


def test_a_cloud_run_reads_as_the_same_run_offline() -> None:
    (run_dir,) = FIXTURE.glob("offline-run-*")
    rows, config = _rows_of(run_dir)
    api = FakeApi({"team/benchbed/abc123": FakeRun(rows, config, {"timing_s/step": 1.0})})
    history = read_wandb_cloud("wandb://team/benchbed/abc123", api=api)
    assert (history.source.uri, history.source.run_id, history.source.project) == (
        "wandb://team/benchbed/abc123", "abc123", "benchbed")  # fmt: skip
    offline = VerlAdapter().parse(run_dir)
    cloud = VerlAdapter().parse_history(history)
    assert cloud.events.drop(columns=["attrs"], errors="ignore").equals(
        offline.events.drop(columns=["attrs"], errors="ignore"))  # fmt: skip
    assert cloud.meta.mode == offline.meta.mode == "v1_sync"


def test_the_history_comes_in_pages_with_progress() -> None:
    rows = [{"_step": s, "_timestamp": 1.7e9 + s, "timing_s/step": float(s)} for s in range(2500)]
    run = FakeRun(rows, {}, {})
    seen: list[tuple[int, int | None]] = []
    history = read_wandb_cloud("wandb://e/p/r", progress=lambda done, total: seen.append((done, total)),
                               api=FakeApi({"e/p/r": run}))  # fmt: skip
    assert run.pages == [0, 1000, 2000]
    assert seen == [(1000, 2500), (2000, 2500), (2500, 2500)]
    assert history.frame["timing_s/step"].tolist() == [float(s) for s in range(2500)]


def test_missing_runs_summary_only_runs_and_bad_uris_are_one_line() -> None:
    api = FakeApi({"e/p/only-summary": FakeRun([], {}, {"eval/acc": 0.5})})
    with pytest.raises(HistoryError, match=r"^wandb://e/p/gone: W&B run not read within 30 s per request "
                                           r"\(Could not find run e/p/gone\)$"):  # fmt: skip
        read_wandb_cloud("wandb://e/p/gone", api=api)
    with pytest.raises(HistoryError, match=r"only summary values \(eval/acc\) and no history rows"):
        read_wandb_cloud("wandb://e/p/only-summary", api=api)
    with pytest.raises(HistoryError, match="expected wandb://ENTITY/PROJECT/RUN_ID"):
        read_wandb_cloud("wandb://just-a-project", api=api)


@pytest.mark.live
@pytest.mark.skipif(
    not (os.environ.get("WANDB_API_KEY") and os.environ.get("BENCHBED_WANDB_RUN")),
    reason="set WANDB_API_KEY and BENCHBED_WANDB_RUN=ENTITY/PROJECT/RUN_ID to read a real run",
)
def test_live_cloud_run() -> None:
    pytest.importorskip("wandb")
    history = open_history(f"wandb://{os.environ['BENCHBED_WANDB_RUN']}")
    assert len(history.frame) > 0 and history.source.tracker == "wandb"
    assert os.environ["WANDB_API_KEY"] not in repr(history.source) + repr(history.config)
