"""prime-rl console formats in real use: decimal step times and the `prime` CLI's bracketed levels."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from benchbed.adapters.prime_rl.console import parse_format_time
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbed import keys as K


def _steps(trace) -> dict[int, float]:
    rows = trace.of(K.TRAINER_STEP)
    return dict(zip(rows["step"].astype(int), rows["value"].astype(float), strict=True))


@pytest.mark.parametrize(("text", "seconds"), [("9.5s", 9.5), ("59.9s", 59.9), ("1m 0.5s", 60.5), ("850ms", 0.85)])
def test_format_time_reads_one_decimal_seconds(text: str, seconds: float) -> None:
    assert parse_format_time(text) == pytest.approx(seconds)


def test_format_time_refuses_text_that_is_not_a_duration() -> None:
    assert math.isnan(parse_format_time("9.5.1s"))
    assert math.isnan(parse_format_time("abc"))


def test_step_lines_with_decimal_seconds_are_read(tmp_path: Path) -> None:
    log = tmp_path / "trainer.log"
    log.write_text(
        "10:00:01    INFO Starting RL trainer\n"
        "10:00:11 SUCCESS Step 1 | 9.5s | Loss: 0.0100 | Entropy: 0.5000\n"
        "10:00:20 SUCCESS Step 2 | 8.7s | Loss: 0.0100 | Entropy: 0.5000\n"
        "10:01:25 SUCCESS Step 3 | 1m 5s | Loss: 0.0100 | Entropy: 0.5000\n"
    )
    assert _steps(PrimeRLAdapter().parse(log)) == {1: 9.5, 2: 8.7, 3: 65.0}


def test_prime_cli_bracketed_levels_are_a_prime_rl_log(tmp_path: Path) -> None:
    log = tmp_path / "hosted.log"
    log.write_text(
        "18:14:50 [INFO] Starting RL trainer\n"
        "18:15:00 [SUCCESS] Step 1 | 9.8s | Loss: 0.0100 | Entropy: 0.5000\n"
        "18:15:09 [SUCCESS] Step 2 | 9.1s | Loss: 0.0090 | Entropy: 0.4900\n"
    )
    assert _steps(PrimeRLAdapter().parse(log)) == {1: 9.8, 2: 9.1}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.1, 7200, allow_nan=False).map(lambda x: round(x, 1)), min_size=1, max_size=6))
def test_console_step_times_round_trip_format_time(tmp_path_factory: pytest.TempPathFactory, times: list) -> None:
    """Any step time written the way prime-rl's format_time writes it is read back within its rounding."""

    def format_time(t: float) -> str:  # prime-rl's format, one decimal below a minute
        if t >= 3600:
            return f"{t // 3600:.0f}h {(t % 3600) // 60:.0f}m"
        if t >= 60:
            return f"{t // 60:.0f}m {(t % 60) // 1:.0f}s"
        return f"{t * 1e3:.0f}ms" if t < 1 else f"{t:.1f}s"

    log = tmp_path_factory.mktemp("prop") / "trainer.log"
    log.write_text(
        "".join(f"10:00:{i:02d} SUCCESS Step {i + 1} | {format_time(t)} | Loss: 0.01\n" for i, t in enumerate(times))
    )
    steps = _steps(PrimeRLAdapter().parse(log))
    assert sorted(steps) == list(range(1, len(times) + 1))
    for i, t in enumerate(times):
        tolerance = 60.0 if t >= 3600 else 1.0 if t >= 60 else 0.051
        assert abs(steps[i + 1] - t) <= tolerance
