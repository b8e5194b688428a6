"""Console logs in SkyRL's and OpenRLHF's own print formats (lines reconstructed from their format strings: SkyRL's
Timer at NovaSky-AI/SkyRL a9564572e, openrlhf 0.11.2's PPOTrainer.fit) read through the kit, to figures by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.adapter import get_adapter

SKYRL = (
    "2026-12-03 10:00:00.000 | INFO     | skyrl.train.trainer:train:342 - Started: 'step'\n"
    "2026-12-03 10:00:03.000 | INFO     | skyrl.train.trainer:train:361 - Finished: 'generate', time cost: 3.00s\n"
    "2026-12-03 10:00:05.000 | INFO     | skyrl.train.trainer:train:450 - Finished: 'train_critic_and_policy', "
    "time cost: 2.00s\n"
    "2026-12-03 10:00:06.000 | INFO     | skyrl.train.trainer:train:342 - Finished: 'step', time cost: 6.00s\n"
)
OPENRLHF = (
    "INFO 12-03 10:00:00 ppo_trainer.py:551] ✨ Global step 1: {'timing/make_experience': 2.0, "
    "'timing/ppo_train': 3.0, 'timing/broadcast': 1.0, 'timing/generation': 4.0, 'timing/step_total': 10.0}\n"
)


def figures(adapter: str, text: str, tmp_path: Path) -> dict[str, float]:
    log = tmp_path / "run.log"
    log.write_text(text)
    events = get_adapter(adapter).parse(log).events
    return events.groupby("key", observed=True)["value"].sum().to_dict()


def test_skyrl_timer_lines_read_as_one_step(tmp_path: Path) -> None:
    got = figures("skyrl", SKYRL, tmp_path)
    assert got["trainer.step"] == pytest.approx(6.0)
    assert got["trainer.compute"] == pytest.approx(2.0)


def test_openrlhf_global_step_dicts_read_under_train(tmp_path: Path) -> None:
    got = figures("openrlhf", OPENRLHF, tmp_path)
    assert got["trainer.step"] == pytest.approx(10.0)
    assert got["trainer.compute"] == pytest.approx(5.0)  # make_experience + ppo_train
    assert got["trainer.wait"] == pytest.approx(4.0)  # sync: step_total - the three timers = generation
    assert got["trainer.weight_sync"] == pytest.approx(1.0)
