"""ROLL's console output (the driver's log, tests/fixtures/roll/console/, in the format of ROLL@8eb27cc) read through
the kit's console format to the figures of the tracker fixtures, checked by hand: the stdout tracker's
`metrics_tag:` lines and the pipeline's own `json.dumps(metrics)` line each carry a whole step."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.errors import AdapterError

ROOT = Path(__file__).resolve().parents[3]
CONSOLE = ROOT / "tests" / "fixtures" / "roll" / "console"
SYNC, ASYNC = CONSOLE / "sync-stdout.log", CONSOLE / "async-tensorboard.log"
ADAPTER = get_adapter("roll")


def per_step(trace, key: str) -> list[tuple[int, float]]:
    rows = trace.of(key).sort_values("step")
    return [(int(s), float(v)) for s, v in zip(rows["step"], rows["value"], strict=True)]


def test_the_async_log_reads_to_the_hand_computed_metrics(tmp_path: Path, ingest) -> None:
    """Window steps 2-6 (ROLL's 1-5): generate 10, 6, 8, 14, 12 s + 30 s of the rest each + a 2 s validation -> 202 s;
    mode from the off-policy ratio (the console carries no config)."""
    record, m = ingest(ASYNC, "--adapter", "roll", "--store", tmp_path)
    assert record["status"] == "succeeded" and record["adapter"]["mode"] == "async"
    assert m["trainer_idle_ratio"] == pytest.approx(50 / 202)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(10 / 202)
    assert m["trainer_compute_ratio"] == pytest.approx(135 / 202)
    assert m["trainer_other_ratio"] == pytest.approx((5 + 2) / 202)
    assert m["step_time_mean_s"] == pytest.approx(40.4)
    assert m["trainer_throughput_sps"] == pytest.approx(5 * 64 / 202)
    assert m["framework_staleness_mean"] == pytest.approx(3.0 / 5)
    assert any("step(s) 7 have none and are left out" in w for w in record["warnings"])


def test_the_sync_log_with_the_stdout_tracker(tmp_path: Path, ingest) -> None:
    """Sync: generate 28, 32, 30, 26, 34 s in the window, a 2 s validation at ROLL's 3 -> 150 s of 302 s."""
    record, m = ingest(SYNC, "--adapter", "roll", "--store", tmp_path)
    assert record["adapter"]["mode"] == "sync"
    assert m["trainer_idle_ratio"] == pytest.approx(150 / 302)
    assert m["step_time_mean_s"] == pytest.approx(60.4)
    assert m["framework_staleness_mean"] == pytest.approx(0.0)


def test_each_step_gets_the_total_roll_logs_at_the_next() -> None:
    """Step k's wall clock: 1 + 2 + generate + 3 + 4 + 20 s, logged at ROLL's step k (pre_step_total_time)."""
    trace = ADAPTER.parse(ASYNC)
    assert per_step(trace, "trainer.step") == [(1, 82.0), (2, 40.0), (3, 36.0), (4, 40.0), (5, 44.0), (6, 42.0)]
    assert per_step(trace, "trainer.wait") == [(1, 50.0), (2, 10.0), (3, 6.0), (4, 8.0), (5, 14.0), (6, 12.0)]
    assert per_step(trace, "trainer.weight_sync") == [(s, 2.0) for s in range(1, 7)]


def test_either_metrics_line_alone_gives_the_same_steps(tmp_path: Path) -> None:
    """The stdout tracker's line names its step; the pipeline's JSON line belongs to the step opened before it."""
    lines = SYNC.read_text().splitlines(keepends=True)
    tagged, plain = tmp_path / "tagged.log", tmp_path / "plain.log"
    tagged.write_text("".join(line for line in lines if "(838)]" not in line))
    plain.write_text("".join(line for line in lines if "metrics_tag:" not in line))
    whole = per_step(ADAPTER.parse(SYNC), "trainer.step")
    assert whole == [(1, 62.0), (2, 58.0), (3, 62.0), (4, 62.0), (5, 56.0), (6, 64.0)]
    assert per_step(ADAPTER.parse(tagged), "trainer.step") == whole == per_step(ADAPTER.parse(plain), "trainer.step")


def test_a_roll_log_without_its_metrics_is_refused_saying_what_it_expected(tmp_path: Path) -> None:
    log = tmp_path / "driver.log"
    log.write_text("".join(line for line in ASYNC.read_text().splitlines(keepends=True) if "(838)]" not in line))
    with pytest.raises(AdapterError, match=r"driver\.log: a ROLL console log, but no timing block; expected the me"):
        ADAPTER.parse(log)


def test_the_console_fixtures_regenerate(tmp_path: Path, fixture_generator) -> None:
    fixture_generator("roll/make_console.py").main(tmp_path)
    for log in (SYNC, ASYNC):
        assert (tmp_path / "console" / log.name).read_bytes() == log.read_bytes(), log.name
