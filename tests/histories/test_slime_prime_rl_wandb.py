"""slime's and prime-rl's W&B histories (written by the real wandb, offline, one run per framework process; see
tests/fixtures/histories/README.md) read to the same figures as the same run's console log / metrics.jsonl."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from benchbed.adapters.slime import SlimeAdapter

from benchbed.adapterkit.histories import HistoryError, open_history
from benchbed.adapterkit.histories.history import PART
from benchbed.metrics import compute_metrics
from benchbed.pipeline import recognising_adapters
from benchbed.trace import Trace

pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")

FIXTURES = Path(__file__).parents[1] / "fixtures"
SLIME_WANDB = FIXTURES / "histories" / "slime" / "sync_colocated_624b824" / "wandb"
PRIME_WANDB = FIXTURES / "histories" / "prime_rl" / "head-559b447" / "wandb"
CASES = {
    "slime": (SlimeAdapter, FIXTURES / "slime" / "sync_colocated_624b824", SLIME_WANDB),
    "prime_rl": (PrimeRLAdapter, FIXTURES / "prime_rl" / "head-559b447" / "metrics.jsonl", PRIME_WANDB),
}


def _rows(trace: Trace) -> list[tuple[str, int, float, float, float]]:
    e = trace.events
    return sorted(zip(e["key"], e["step"].astype(int), e["value"].astype(float), e["t0"].astype(float),
                      e["t1"].astype(float), strict=True))  # fmt: skip


@pytest.mark.parametrize("framework", CASES)
def test_the_wandb_history_gives_the_figures_of_the_console_or_jsonl(framework: str) -> None:
    adapter, reference_path, wandb_dir = CASES[framework]
    reference, trace = adapter().parse(reference_path), adapter().parse(wandb_dir)
    mine, theirs = _rows(trace), _rows(reference)
    assert [r[:2] for r in mine] == [r[:2] for r in theirs]
    for a, b in zip(mine, theirs, strict=True):  # value, start and end of every event
        assert all((math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-9)
                   for x, y in zip(a[2:], b[2:], strict=True)), a[:2]  # fmt: skip
    ours, expected = compute_metrics(trace, warmup_steps=1), compute_metrics(reference, warmup_steps=1)
    assert set(ours) == set(expected)  # no figure of these runs needs what only the console/JSONL has
    for name, metric in expected.items():
        assert ours[name].value == pytest.approx(metric.value, rel=1e-12, abs=1e-12), name
    assert (trace.meta.mode, trace.meta.samples_per_step, trace.meta.group_size) == (
        reference.meta.mode, reference.meta.samples_per_step, reference.meta.group_size)  # fmt: skip
    assert trace.meta.extra["history"]["tracker"] == "wandb" and not trace.meta.partial


def test_slime_figures_by_hand() -> None:
    """The sync scenario's numbers (tests/fixtures/slime/make_fixtures.py): 4 steps of train_wait + train, the first
    60 + 20 s after warm-up, the driver's wandb.init 5 s before the first train_wait started."""
    metrics = compute_metrics(SlimeAdapter().parse(SLIME_WANDB), warmup_steps=1)
    assert metrics["step_time_mean_s"].value == pytest.approx(82.0)
    assert metrics["trainer_idle_ratio"].value == pytest.approx(154.5 / 246)
    assert metrics["startup_s"].value == pytest.approx(5.0)
    assert metrics["zero_adv_group_fraction"].value == pytest.approx(3 / 12)


def test_prime_rl_run_directory_figures_a_history_cannot_hold_are_absent() -> None:
    """The run directory adds the per-episode traces (rollouts/step_N/): their figures are absent from the W&B
    history, which holds the monitor's per-step rows only; every figure both have is the same."""
    run_dir = compute_metrics(PrimeRLAdapter().parse(FIXTURES / "prime_rl" / "head-559b447"), warmup_steps=1)
    wandb = compute_metrics(PrimeRLAdapter().parse(PRIME_WANDB), warmup_steps=1)
    assert set(wandb) < set(run_dir)
    assert {"rollout_latency_p50_s", "sandbox_start_p50_s"} & (set(run_dir) - set(wandb))


@pytest.mark.parametrize(("wandb_dir", "parts", "framework"), [(SLIME_WANDB, 3, "slime"), (PRIME_WANDB, 2, "prime_rl")])
def test_one_jobs_process_runs_merge_by_step_and_name_their_framework(wandb_dir: Path, parts: int,
                                                                      framework: str) -> None:  # fmt: skip
    history = open_history(wandb_dir)
    runs = sorted(p.name for p in wandb_dir.iterdir())
    assert len(runs) == parts and sorted(set(history.frame[PART])) == runs[-2:]  # slime's driver logged no rows
    assert history.frame["step"].is_monotonic_increasing
    assert recognising_adapters(history.keys) == [framework]
    if framework == "prime_rl":  # `define_metric("*", step_metric="step")`: the run's own step is the step
        assert list(history.frame["step"].unique()) == [1, 2, 3, 4, 5, 6]
        assert history.source.run_id == "+".join(r.rsplit("-", 1)[1] for r in runs)
    else:
        assert history.source.run_id == "slimesync1" and history.config["rollout_batch_size"] == 4


def test_one_process_alone_is_that_process_history(tmp_path: Path) -> None:
    """The prime-rl trainer's run alone: the trainer's steps, no orchestrator figures."""
    trainer = next(p for p in sorted(PRIME_WANDB.iterdir()) if "time/wait_for_batch" in open_history(p).keys)
    trace = PrimeRLAdapter().parse(trainer)
    assert sorted(set(trace.events.loc[trace.events["key"] == "trainer.step", "step"])) == [1, 2, 3, 4, 5, 6]
    assert "generator_throughput_sps" not in compute_metrics(trace, warmup_steps=1)


def test_runs_of_different_jobs_are_not_merged(tmp_path: Path) -> None:
    folder = tmp_path / "wandb"
    shutil.copytree(PRIME_WANDB, folder)
    shutil.copytree(SLIME_WANDB, folder, dirs_exist_ok=True)
    with pytest.raises(HistoryError, match=r"holds 5 W&B runs; pass one run directory: .*\(not one job's processes: "
                                           r"their run ids differ, and so do their projects or names\)$"):  # fmt: skip
        open_history(folder)


@pytest.mark.parametrize(("wandb_dir", "framework"), [(SLIME_WANDB, "slime"), (PRIME_WANDB, "prime_rl")])
def test_benchbed_ingest_reads_them_with_or_without_adapter(
    benchbed, wandb_dir: Path, framework: str, tmp_path: Path
) -> None:
    for named in ([], ["--adapter", framework]):
        done = benchbed("ingest", wandb_dir, *named, "--store", tmp_path / "results", "--json")
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        assert record["adapter"]["name"] == framework and record["spec"]["source"] == str(wandb_dir.resolve())
    stored = [p for p in (tmp_path / "results").rglob("native") if p.is_dir()]
    assert len(stored) == 2 and all((p / "history.parquet").is_file() for p in stored)


def test_aprils_partial_rollout_rows_belong_to_the_trainers_rollout_before_them() -> None:
    """APRIL (RLsys-Foundation/APRIL@a72b585) logs its `partial_rollout/*` dict with `wandb.log` and no step axis,
    right after the trainer's `rollout N:` dict: each such row, added to the real history after the trainer's
    rows, gives rollout N's token counts (trained by step N + 1), as the console line does."""
    import pandas as pd
    from benchbed.adapters.slime import history as slime_history

    history = open_history(SLIME_WANDB)
    rows = []
    for _, row in history.frame.iterrows():
        rows.append(row.to_dict())
        if not math.isnan(row.get("rollout/raw_reward", math.nan)):  # the trainer's `rollout N:` dict
            rid = int(row["rollout/step"])
            rows.append({"step": row["step"], "wall_time": row["wall_time"], PART: row[PART],
                         "partial_rollout/total_tokens": 1000.0 * (rid + 1),
                         "partial_rollout/total_off_policy_tokens": 100.0 * rid})  # fmt: skip
    history.frame = pd.DataFrame(rows)
    trace = slime_history.parse_history(history)
    decoded = trace.events[trace.events["key"] == "samples.decoded_tokens"]
    off = trace.events[trace.events["key"] == "samples.off_policy_tokens"]
    assert dict(zip(decoded["step"], decoded["value"], strict=True)) == {1: 1000, 2: 2000, 3: 3000, 4: 4000}
    assert dict(zip(off["step"], off["value"], strict=True)) == {1: 0, 2: 100, 3: 200, 4: 300}
    share = compute_metrics(trace, warmup_steps=1)["off_policy_token_share"].value
    assert share == pytest.approx(600 / (600 + 9000))
