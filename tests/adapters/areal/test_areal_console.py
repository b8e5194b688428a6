"""AReaL's console output (StatsLogger.commit's `Train step N/M done.` and stats table, printed by AReaL's own logger
and tabulate_stats: tests/fixtures/areal/README.md) read through the kit's console format: the TensorBoard history's
rows of the same run (less the `__count` keys commit leaves out) and figures checked by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.errors import AdapterError
from benchbed.logtext import strip_ansi

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "areal"
LOG = FIXTURES / "console" / "grpo-async-6x8.log"
ADAPTER = get_adapter("areal")


def rows(trace) -> list[tuple[str, int, float]]:
    return sorted((str(k), int(s), round(float(v), 7)) for k, s, v in trace.events[["key", "step", "value"]].values)


def test_the_console_log_is_the_tensorboard_historys_rows() -> None:
    console = ADAPTER.parse(LOG)
    history = [r for r in rows(ADAPTER.parse(FIXTURES / "grpo-async-6x8" / "tensorboard")) if "__count" not in r[0]]
    assert rows(console) == history and console.meta.warnings == []


def test_the_steps_and_their_parts_by_hand() -> None:
    """A step is the sum of its timeperf/* scopes: rollout (the wait) 4 s at the first step, then 0 (a batch was
    ready), recompute_logp 1, compute_advantage 0.5, train_step 3, update_weights 1 s; the empty scopes print 0."""
    trace = ADAPTER.parse(LOG)
    steps = trace.of("trainer.step").sort_values("step")
    assert list(steps["step"]) == [1, 2, 3, 4, 5, 6]
    assert list(steps["value"]) == [9.5] + [5.5] * 5
    waits = trace.of("trainer.wait").sort_values("step")
    assert list(waits["value"]) == [4.0] + [0.0] * 5


def test_ingest_without_adapter_gives_the_hand_computed_metrics(tmp_path: Path, ingest) -> None:
    """All six steps (no warm-up): 4 s of waiting in 9.5 + 5 x 5.5 = 37 s; weight sync 1 s a step."""
    record, m = ingest(LOG, "--warmup-steps", "0", "--store", tmp_path)
    assert record["adapter"]["name"] == "areal" and record["status"] == "succeeded"
    assert m["trainer_idle_ratio"] == pytest.approx(4 / 37)
    assert m["trainer_weight_sync_ratio"] == pytest.approx(6 / 37)
    assert m["step_time_mean_s"] == pytest.approx(37 / 6)
    assert m["framework_token_staleness_step_max"] == pytest.approx(5 / 6)


def test_the_plain_log_file_reads_as_the_coloured_stdout(tmp_path: Path) -> None:
    """AReaL's file handler writes the same records without colours (LOG_FORMAT_PLAIN)."""
    plain = tmp_path / "plain.log"
    plain.write_text(strip_ansi(LOG.read_text()))
    assert rows(ADAPTER.parse(plain)) == rows(ADAPTER.parse(LOG))


def test_a_log_without_the_stats_tables_is_refused_saying_what_it_expected(tmp_path: Path) -> None:
    log = tmp_path / "trainer.log"
    log.write_text("".join(line for line in LOG.read_text().splitlines(keepends=True) if "Train step" in line))
    with pytest.raises(AdapterError, match=r"trainer\.log: an AReaL console log, but no timing block; expected the s"):
        ADAPTER.parse(log)


@pytest.mark.slow
def test_the_console_log_regenerates_with_areals_own_code() -> None:
    """Opt-in: needs AReaL and tabulate importable (tests/fixtures/areal/README.md says how)."""
    pytest.importorskip("areal.utils.printing", reason="AReaL is not importable (tests/fixtures/areal/README.md)")
    done = subprocess.run([sys.executable, str(FIXTURES / "make_console.py")], capture_output=True, env=os.environ,
                          timeout=120, check=True)  # fmt: skip
    assert done.stdout == LOG.read_bytes()
