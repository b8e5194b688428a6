"""prime-rl ingest of a HEAD-era run (metrics.jsonl plus per-step traces.jsonl episode records) against an orjson
pass over every line of the same files (target: at most 1.2x), and the ingest's peak memory (target < 2 GiB)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from ratios import PRINT_PEAK_RSS_KIB, baseline_median, median_of, ratio
from workloads import jsonl_files, write_prime_rl_run

ROUNDS = 3
PEAK_RSS_LIMIT_GIB = 2.0


@pytest.fixture(scope="module")
def size(quick: bool) -> tuple[int, int]:
    """(steps, episodes): the full run is 1.3 GB of episode records."""
    return (20, 10_000) if quick else (200, 100_000)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, size: tuple[int, int]) -> Path:
    run = tmp_path_factory.mktemp("prime_rl") / "run"
    write_prime_rl_run(run, *size)
    return run


def orjson_every_line(run: Path) -> int:
    rows = 0
    for path in jsonl_files(run):
        with path.open("rb") as fh:
            for line in fh:
                orjson.loads(line)
                rows += 1
    return rows


def test_orjson_every_line(benchmark, run_dir: Path, size: tuple[int, int], medians: dict[str, float]) -> None:
    rows = benchmark.pedantic(orjson_every_line, args=(run_dir,), rounds=ROUNDS, iterations=1)
    assert rows > size[1]  # every episode at least once, plus the metrics rows
    medians["orjson, every line (prime-rl)"] = median_of(benchmark)


def test_prime_rl_ingest(benchmark, run_dir: Path, size: tuple[int, int], medians: dict[str, float]) -> None:
    adapter = PrimeRLAdapter()
    trace = benchmark.pedantic(adapter.parse, args=(run_dir,), rounds=ROUNDS, iterations=1)
    assert int((trace.events["key"] == "rollout").sum()) == size[1]
    baseline = baseline_median(medians, "orjson, every line (prime-rl)")
    name = f"prime-rl ingest, {size[1]:,} episodes"
    ratio(name, median_of(benchmark), "orjson, every line (prime-rl)", baseline, 1.2)


INGEST = f"""
import sys
from benchbed.adapters.prime_rl import PrimeRLAdapter
PrimeRLAdapter().parse(sys.argv[1])
{PRINT_PEAK_RSS_KIB}
"""


def test_prime_rl_ingest_peak_memory(run_dir: Path) -> None:
    """The ingest alone in a fresh process, so the peak RSS is its own."""
    out = subprocess.run([sys.executable, "-c", INGEST, str(run_dir)], check=True, capture_output=True, text=True)
    peak_gib = int(out.stdout.split()[-1]) / 2**20
    print(json.dumps({"prime_rl_ingest_peak_rss_gib": round(peak_gib, 3)}))
    assert peak_gib < PEAK_RSS_LIMIT_GIB
