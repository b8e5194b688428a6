"""Start-up of the `benchbed` command: `--help` and `--version` against a bare `python -c pass` measured in the same
run. Target: each under 0.25 s (issue 22); the ratio to the bare interpreter shows what benchbed itself adds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ratios import baseline_median, median_of, ratio

ROUNDS = 15
TARGET_S = 0.25
SCRIPT = Path(sys.executable).with_name("benchbed")  # the console script a user runs
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "benchbed"]


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_bare_interpreter(benchmark, medians: dict[str, float]) -> None:
    benchmark.pedantic(_run, args=([sys.executable, "-c", "pass"],), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    medians["python -c pass"] = median_of(benchmark)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_benchbed_start_up(benchmark, medians: dict[str, float], flag: str) -> None:
    benchmark.pedantic(_run, args=([*COMMAND, flag],), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    target = median_of(benchmark)
    ratio(f"benchbed {flag} ({target:.3f} s)", target, "python -c pass", baseline_median(medians, "python -c pass"),
          None)  # fmt: skip
    assert target < TARGET_S, f"benchbed {flag}: {target:.3f} s, target under {TARGET_S} s"
