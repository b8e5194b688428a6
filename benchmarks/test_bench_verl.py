"""verl parse of a 10,000-step x 300-key file-logger JSONL against pandas.read_json(lines=True) on the same file
(target: at most 0.8x) and against an orjson pass over every line (the practical limit, reported)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pytest
from benchbed.adapters.verl import VerlAdapter
from ratios import baseline_median, median_of, ratio
from workloads import write_verl_jsonl

KEYS = 300
ROUNDS = 3


@pytest.fixture(scope="module")
def steps(quick: bool) -> int:
    return 1_000 if quick else 10_000


@pytest.fixture(scope="module")
def verl_file(tmp_path_factory: pytest.TempPathFactory, steps: int) -> Path:
    path = tmp_path_factory.mktemp("verl") / "metrics.jsonl"
    write_verl_jsonl(path, steps, KEYS)
    return path


def orjson_lines(path: Path) -> list[dict]:
    with path.open("rb") as fh:
        return [orjson.loads(line) for line in fh]


def test_pandas_read_json(benchmark, verl_file: Path, steps: int, medians: dict[str, float]) -> None:
    frame = benchmark.pedantic(pd.read_json, args=(verl_file,), kwargs={"lines": True}, rounds=ROUNDS, iterations=1)
    assert len(frame) == steps
    medians["pandas.read_json(lines=True)"] = median_of(benchmark)


def test_orjson_every_line(benchmark, verl_file: Path, steps: int, medians: dict[str, float]) -> None:
    rows = benchmark.pedantic(orjson_lines, args=(verl_file,), rounds=ROUNDS, iterations=1)
    assert len(rows) == steps
    medians["orjson, every line"] = median_of(benchmark)


def test_verl_parse(benchmark, verl_file: Path, steps: int, medians: dict[str, float]) -> None:
    adapter = VerlAdapter()
    trace = benchmark.pedantic(adapter.parse, args=(verl_file,), rounds=ROUNDS, iterations=1)
    events = trace.events
    assert set(events.loc[events["key"] == "trainer.step", "step"]) == set(range(1, steps + 1))
    seconds = median_of(benchmark)
    name = f"verl parse, {steps:,} steps x {KEYS} keys"
    ratio(name, seconds, "orjson, every line", baseline_median(medians, "orjson, every line"), None)
    ratio(name, seconds, "pandas.read_json(lines=True)", baseline_median(medians, "pandas.read_json(lines=True)"), 0.8)
