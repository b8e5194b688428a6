"""W&B cloud runs through wandb.Api. The cloud cannot be reached here: a fake with wandb.Api's interface
(`Api.run(path)`, `Run.scan_history(page_size=...)`, `config`, `rawconfig`, `summary`, `lastHistoryStep`, `name`)
serves rows as the public API returns them (dicts with wandb's counter as `_step`, `_timestamp` and the logged keys)
and the metric definitions wandb keeps in the run's config (`rawconfig["_wandb"]["m"]`); the live test runs when
credentials are set."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from benchbed.adapters.verl import VerlAdapter

from benchbed.adapterkit.histories import HistoryError, open_history
from benchbed.adapterkit.histories.wandb_cloud import read_wandb_cloud
from benchbed.adapterkit.histories.wandb_file import RecordLog, find_wandb_file
from benchbed.metrics import compute_metrics

FIXTURE = Path(__file__).parents[1] / "fixtures" / "histories" / "verl" / "verl-0.9.1-v1_sync" / "wandb"
PRIME_WANDB = Path(__file__).parents[1] / "fixtures" / "histories" / "prime_rl" / "head-559b447" / "wandb"


class FakeRun:
    def __init__(self, rows: list[dict[str, Any]], config: dict[str, Any], summary: dict[str, Any],
                 metrics: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
        self.rows, self.config, self.summary, self.name = rows, config, summary, "fake"
        self.rawconfig = {**config, "_wandb": {"m": metrics or []}}
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


def _cloud_copy(run_dir: Path, expanded: bool) -> FakeRun:
    """The run as wandb's public API serves it: each history record of its `.wandb` file a row of JSON values under
    their keys, wandb's counter as `_step`; its `define_metric("*", step_metric=...)` kept in the config's `_wandb.m`
    as wandb-core encodes it (wandb/wandb core/internal/runmetric/runconfigmetrics.go at 0701306: the glob as is
    with the 1-based index of its step metric, where the server expands globs) or, `expanded`, as the SDK expands
    it, one definition per logged key."""
    from wandb.proto.wandb_internal_pb2 import Record

    wandb_file = find_wandb_file(run_dir)
    assert wandb_file is not None
    rows, steps = [], set()
    for raw in RecordLog(wandb_file, wandb_file, []):
        record = Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            rows.append({"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in record.history.item})
        elif record.WhichOneof("record_type") == "metric" and record.metric.glob_name == "*":
            steps.add(record.metric.step_metric)
    (step,) = steps
    if expanded:
        keys = [k for k in dict.fromkeys(k for row in rows for k in row) if not k.startswith("_") and k != step]
        metrics = [{"1": step}, *({"1": k, "5": 1} for k in keys)]
    else:
        metrics = [{"2": "*", "5": 2}, {"1": step}]
    offline = open_history(run_dir)
    return FakeRun(rows, offline.config, offline.summary, metrics)


@pytest.mark.parametrize("expanded", [False, True], ids=["glob", "expanded"])
def test_prime_rl_runs_read_from_the_cloud_as_offline_on_their_own_step(expanded: bool) -> None:
    """prime-rl logs `{**metrics, "step": step}` after `define_metric("*", step_metric="step")`: the public API's
    rows carry wandb's counter as `_step` (the trainer logs several rows a step), the history is on prime-rl's step,
    the same as offline for both processes' runs, and the trainer's run gives the figures its offline run gives."""
    pytest.importorskip("wandb")
    clouds = {}
    for run_dir in sorted(PRIME_WANDB.iterdir()):
        fake = _cloud_copy(run_dir, expanded)
        assert [row["_step"] for row in fake.rows] == list(range(len(fake.rows)))
        clouds[run_dir] = read_wandb_cloud("wandb://team/prime/r1", api=FakeApi({"team/prime/r1": fake}))
        assert sorted(set(clouds[run_dir].frame["step"])) == [1, 2, 3, 4, 5, 6]
        assert clouds[run_dir].frame.equals(open_history(run_dir).frame), run_dir.name
    (trainer,) = [d for d, h in clouds.items() if "time/wait_for_batch" in h.keys]
    assert len(clouds[trainer].frame) == 30  # the trainer's 30 rows on 6 steps
    ours, theirs = PrimeRLAdapter().parse_history(clouds[trainer]), PrimeRLAdapter().parse(trainer)
    columns = ["key", "step", "value", "t0", "t1"]
    assert len(ours.events) > 0 and ours.events[columns].equals(theirs.events[columns])
    metrics, expected = compute_metrics(ours, warmup_steps=1), compute_metrics(theirs, warmup_steps=1)
    assert metrics.keys() == expected.keys() and "step_time_mean_s" in metrics
    assert {k: m.value for k, m in metrics.items()} == pytest.approx({k: m.value for k, m in expected.items()})


def test_a_cloud_run_without_a_step_of_its_own_keeps_wandbs_counter() -> None:
    """A step metric defined for some keys only is not the run's step."""
    rows = [{"_step": i, "_timestamp": 1.7e9 + i, "step": i // 2, "a": float(i), "b": 1.0} for i in range(4)]
    fake = FakeRun(rows, {}, {}, [{"1": "step"}, {"1": "a", "5": 1}])
    history = read_wandb_cloud("wandb://e/p/r", api=FakeApi({"e/p/r": fake}))
    assert list(history.frame["step"]) == [0, 1, 2, 3] and list(history.frame["a"]) == [0.0, 1.0, 2.0, 3.0]


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
