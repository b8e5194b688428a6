"""slime SFT runs (scripts/run-qwen3-4B-base-sft.sh at 624b824: train_async.py --loss-type sft_loss with the
sft_rollout "rollout", which tokenises dataset samples, and --debug-train-only) are trainer-only runs with mode "sft":
the RolloutManager's perf lines are not generation, so no generator, group or staleness figures. The fixture
sft_624b824/run.log is written by make_fixtures.py::sft_console in slime's line formats at that commit."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter

from benchbed import keys as K
from benchbed.metrics import compute_metrics

FIX = Path(__file__).parents[2] / "fixtures" / "slime"
RL_ONLY = ("generator_", "rate_gap", "wasted_generation_fraction", "zero_adv_group_fraction", "staleness")


def test_an_sft_run_is_trainer_only() -> None:
    trace = SlimeAdapter().parse(FIX / "sft_624b824")
    assert trace.meta.mode == "sft" and trace.meta.framework_version == "624b824"
    assert trace.meta.extra["detection"]["mode"].startswith("--loss-type sft_loss (")
    assert trace.meta.warnings == [] and trace.meta.group_size is None and trace.meta.samples_per_step == 128
    assert trace.meta.extra["structural_staleness"] is None
    keys = set(trace.events["key"])
    assert not [k for k in keys if k.startswith(("generator.", "rollout", "groups.", "samples.finished"))]
    steps = trace.events[trace.events["key"] == K.TRAINER_STEP]
    assert list(steps["t1"] - steps["t0"]) == [14.5, 11.5, 11.5]  # train_wait + train of each step
    metrics = compute_metrics(trace, warmup_steps=1)
    assert not [name for name in metrics if name.startswith(RL_ONLY)]
    assert metrics["step_time_mean_s"].value == pytest.approx(11.5)
    assert metrics["trainer_compute_ratio"].value == pytest.approx(10.5 / 11.5)


def test_the_rollout_function_alone_marks_an_sft_run(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text((FIX / "sft_624b824" / "run.log").read_text().replace("sft_loss", "policy_loss"))
    trace = SlimeAdapter().parse(log)
    assert trace.meta.mode == "sft"
    assert trace.meta.extra["detection"]["mode"].startswith(
        "--rollout-function-path slime.rollout.sft_rollout.generate_rollout ("
    )


def test_rl_runs_keep_their_loops() -> None:
    assert SlimeAdapter().parse(FIX / "sync_colocated_624b824").meta.mode == "sync"
    assert SlimeAdapter().parse(FIX / "async_v031").meta.mode == "one_step_off"
