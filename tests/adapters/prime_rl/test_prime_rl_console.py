"""Console logs (ANSI loguru text, --log.json-logging), env-server logs, fallbacks and refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from benchbed.adapters.prime_rl.console import iter_records, parse_format_time

from benchbed import keys as K
from benchbed.errors import NotThisFrameworkError
from benchbed.metrics import compute_metrics


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.of(key)
    return dict(zip(rows["step"].astype(int), rows["value"].astype(float), strict=True))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("850ms", 0.85), ("12s", 12.0), ("1m 3s", 63.0), ("2m", 120.0), ("1h 5m", 3900.0), ("1d 2h", 93600.0)],
)
def test_parse_format_time(text: str, seconds: float) -> None:
    assert parse_format_time(text) == pytest.approx(seconds)


def test_format_time_round_trips_the_generator(gen) -> None:
    for t in (0.25, 9.6, 63.6, 599.9):
        assert abs(parse_format_time(gen.format_time(t)) - t) < 1.0


def test_ansi_lines_are_read(fixtures: Path) -> None:
    records = iter_records(fixtures / "head-559b447" / "logs" / "latest" / "trainer.log")
    assert records[0].level == "INFO" and records[0].message.startswith("Starting RL trainer")
    assert records[2].message.startswith("Step 1 |")
    assert records[2].t == 10 * 3600 + 1 * 60 + 33


def test_trainer_console_log_gives_step_times_only(fixtures: Path, gen) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "head-559b447" / "logs" / "latest" / "trainer.log")
    steps = agg(trace, K.TRAINER_STEP)
    # format_time rounds down to whole seconds (or minutes + seconds).
    assert steps == {k + 1: parse_format_time(gen.format_time(gen.step_time(t))) for k, t in enumerate(gen.HEAD_TIMERS)}
    assert not len(trace.of(K.TRAINER_WAIT))
    assert any("no 'Waited for batch to arrive' lines" in w for w in trace.meta.warnings)
    assert "trainer_idle_ratio" not in compute_metrics(trace)
    assert trace.meta.extra["era"] == "v0.6+"


def test_json_logging_variant_with_debug_waits(fixtures: Path, gen) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "head-559b447-json-logging.log")
    assert agg(trace, K.TRAINER_WAIT) == {k + 1: t[0] for k, t in enumerate(gen.HEAD_TIMERS)}
    steps = agg(trace, K.TRAINER_STEP)
    expected = sum(t[0] for t in gen.HEAD_TIMERS[1:]) / sum(steps[k] for k in range(2, 7))
    assert compute_metrics(trace)["trainer_idle_ratio"].value == pytest.approx(expected)


def test_v050_console_only_run(fixtures: Path, gen) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "v0.5.0-63331ad")
    assert trace.meta.extra["era"] == "v0.5-"
    assert trace.meta.framework_version.startswith("<=v0.5")
    assert trace.meta.extra["step_offset"] == 1
    steps, waits = agg(trace, K.TRAINER_STEP), agg(trace, K.TRAINER_WAIT)
    assert steps == {n + 1: s for n, (s, _, _) in enumerate(gen.V050_STEPS)}
    assert waits == {n + 1: w for n, (_, w, _) in enumerate(gen.V050_STEPS)}
    assert agg(trace, "native.orchestrator.scheduler/async_level") == {1: 0, 2: 1, 3: 1, 4: 1, 5: 1}
    assert agg(trace, "framework.staleness_max") == {1: 0, 2: 1, 3: 1, 4: 1, 5: 1}
    idle = sum(w for _, w, _ in gen.V050_STEPS[1:]) / sum(s for s, _, _ in gen.V050_STEPS[1:])
    assert compute_metrics(trace)["trainer_idle_ratio"].value == pytest.approx(idle)
    assert any(
        "no metrics.jsonl; fell back to console logs (trainer.stdout, orchestrator.stdout)" in w
        for w in trace.meta.warnings
    )
    assert any("shifted by +1" in w for w in trace.meta.warnings)
    assert any("time/step excludes the weight broadcast" in w for w in trace.meta.warnings)


def test_run_dir_without_metrics_falls_back_to_console_logs(run_copy, gen) -> None:
    run = run_copy("head-559b447")
    (run / "metrics.jsonl").unlink()
    trace = PrimeRLAdapter().parse(run)
    assert any(
        "no metrics.jsonl; fell back to console logs (trainer.log, orchestrator.log)" in w for w in trace.meta.warnings
    )
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 2, 3, 4, 5, 6]
    assert len(trace.of(K.ROLLOUT)) == 60  # episodes still come from rollouts/
    assert not trace.meta.partial  # both logs end with their process's "finished" line
    paused = trace.of(K.GENERATOR_PAUSED)
    assert (paused["kind"] == "span").all()
    assert sorted((paused["t1"] - paused["t0"]).round()) == [2.0, 4.0]  # 'Holding batch' until the batch ships


def test_crash_in_console_log_marks_partial(fixtures: Path) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "head-559b447-crashed" / "logs" / "latest" / "trainer.log")
    assert trace.meta.partial
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 2, 3]


def test_env_server_log_as_episode_fallback(fixtures: Path) -> None:
    path = fixtures / "head-559b447-sandbox-failures" / "logs" / "latest" / "envs" / "train" / "swe.log"
    trace = PrimeRLAdapter().parse(path)
    rollouts = trace.of(K.ROLLOUT)
    assert len(rollouts) == 24
    assert (rollouts["status"] == "failed").sum() == 6
    starts = trace.of(K.SANDBOX_START)
    assert (starts["status"] != "ok").sum() == 6
    assert (starts["status"] == "ok").sum() == 18
    failed = starts[starts["status"] != "ok"]
    assert all("stop=SandboxError" in json.loads(a)["message"] for a in failed["attrs"])
    assert (starts["t1"] >= starts["t0"]).all()


def test_run_dir_without_episode_files_uses_env_server_logs(run_copy) -> None:
    run = run_copy("head-559b447-sandbox-failures")
    for path in sorted((run / "rollouts").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (run / "rollouts").rmdir()
    trace = PrimeRLAdapter().parse(run)
    assert len(trace.of(K.ROLLOUT)) == 24
    assert any("episodes and sandbox starts taken from env-server logs" in w for w in trace.meta.warnings)
    starts = trace.of(K.SANDBOX_START)
    assert starts["t0"].notna().all() and not math.isnan(float(starts["t0"].min()))


def test_other_frameworks_console_log_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "verl.log"
    log.write_text(
        "(TaskRunner pid=123) step:1 - global_seqlen/min:1024 - timing_s/gen:12.3 - timing_s/update_actor:4.5\n"
        "(TaskRunner pid=123) step:2 - global_seqlen/min:1011 - timing_s/gen:11.9 - timing_s/update_actor:4.4\n"
    )
    with pytest.raises(NotThisFrameworkError, match=r"^not a prime-rl run: .*neither a metrics.jsonl nor"):
        PrimeRLAdapter().parse(log)


def test_loguru_log_of_something_else_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("10:00:01    INFO Server started\n10:00:02 WARNING Disk almost full\n")
    with pytest.raises(NotThisFrameworkError, match=r"^not a prime-rl run: .*no prime-rl step lines"):
        PrimeRLAdapter().parse(log)


def test_empty_or_foreign_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotThisFrameworkError, match=r"^not a prime-rl run: .*no metrics.jsonl"):
        PrimeRLAdapter().parse(tmp_path)


def test_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotThisFrameworkError, match="does not exist"):
        PrimeRLAdapter().parse(tmp_path / "nope")


def test_info_level_log_before_pr_1467_gives_waits_from_timestamps(fixtures: Path, gen) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "d05dbe9-info-trainer.log")
    assert trace.meta.extra["era"] == "v0.5-" and trace.meta.extra["step_offset"] == 1
    waits = agg(trace, K.TRAINER_WAIT)
    assert sorted(waits) == [1, 2, 3, 4, 5]
    for n, (_, wait, load) in enumerate(gen.D05_STEPS, start=1):
        assert abs(waits[n] - (wait + load)) <= 1.0  # whole-second timestamps; the load is not logged at INFO
    assert any("trainer wait taken from log timestamps" in w for w in trace.meta.warnings)
    steps = gen.D05_STEPS[1:]
    expected = sum(w + ld for _, w, ld in steps) / sum(s for s, _, _ in steps)
    assert compute_metrics(trace)["trainer_idle_ratio"].value == pytest.approx(
        expected, abs=4 / sum(s for s, _, _ in steps)
    )


def test_pasted_excerpts_with_prefixes_or_without_timestamps(tmp_path: Path) -> None:
    """Logs pasted into issues: behind a collector's prefix, with milliseconds, or as bare messages."""
    prefixed = tmp_path / "compose.log"
    prefixed.write_text(
        "trainer-1  | 02:00:13    INFO Initializing weight broadcast (type='filesystem')\n"
        "trainer-1  | 02:00:55   DEBUG Waited for batch to arrive for 40.00 seconds\n"
        "trainer-1  | 02:01:10 SUCCESS Step 1 | Time: 57.00s | Loss: 0.0100 | Entropy: 0.5000\n"
        "[rank0]: 02:01:14.250   DEBUG Waited for batch to arrive for 4.00 seconds\n"
        "[rank0]: 02:01:30.001 SUCCESS Step 2 | Time: 20.00s | Loss: 0.0100 | Entropy: 0.5000\n"
    )
    trace = PrimeRLAdapter().parse(prefixed)
    assert agg(trace, K.TRAINER_WAIT) == {1: 40.0, 2: 4.0}
    assert agg(trace, K.TRAINER_STEP) == {1: 57.0, 2: 20.0}
    bare = tmp_path / "bare.txt"
    bare.write_text(
        "Waited for batch to arrive for 6.50 seconds\n"
        "Step 3 | Time: 26.00s | Loss: 0.0031 | Entropy: 0.5512 | Grad. Norm: 0.1834\n"
        "  Waited for batch to arrive for 13.00 seconds\n"
        "Step 4 | Time: 32.50s | Loss: 0.0030 | Entropy: 0.5510 | Grad. Norm: 0.1800\n"
    )
    trace = PrimeRLAdapter().parse(bare)
    assert agg(trace, K.TRAINER_WAIT) == {3: 6.5, 4: 13.0}
    assert compute_metrics(trace, warmup_steps=0)["trainer_idle_ratio"].value == pytest.approx(19.5 / 58.5)
