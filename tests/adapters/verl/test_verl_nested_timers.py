"""Nested verl timers: in rllm's verl fork (a793c3d) the `adv` timer wraps `old_log_prob` and `ref`, so the phase
timers of a step add up to more than the step. The fixture imitates that run's metrics.jsonl shape (verl's own
keys, step 100 s, gen 76.1 s, old_log_prob 6 s + ref 5 s inside adv 15 s, update_actor 7.1 s, update_weights
0.9 s: 110.1 s of timers). The wait is measured against the step directly, so only compute absorbs the 10.1 s
of overlap: idle = 76.1 / 100 = 0.761 (scaling every component gave 76.1 / 110.1 = 0.691)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.pipeline import ingest
from benchbed.store import Store

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "verl" / "rllm-a793c3d-nested"


def test_only_compute_absorbs_the_overlap_of_nested_timers(tmp_path: Path) -> None:
    record = ingest(FIXTURE, "verl", Store(tmp_path)).record
    metrics = {name: m.value for name, m in record.metrics.items()}
    assert metrics["trainer_idle_ratio"] == pytest.approx(0.761)
    assert metrics["trainer_compute_ratio"] == pytest.approx((6 + 5 + 15 + 7.1 - 10.1) / 100)  # 0.230
    assert metrics["trainer_weight_sync_ratio"] == pytest.approx(0.009)
    assert metrics["trainer_other_ratio"] == pytest.approx(0.0)
    assert any("the overlap is taken out of trainer.compute" in w for w in record.warnings)
