"""NeMo-RL's console log (its per-step timing block) read through the kit's console format, to figures by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.errors import AdapterError

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "nemo_rl" / "console" / "sync-2-steps.log"


def test_the_timing_block_reads_to_the_hand_computed_steps() -> None:
    events = get_adapter("nemo_rl").parse(LOG).events
    steps = events[events["key"] == "trainer.step"].set_index("step")["value"]
    waits = events[events["key"] == "trainer.wait"].set_index("step")["value"]
    assert steps.to_dict() == {1: pytest.approx(20.0), 2: pytest.approx(30.0)}
    assert waits.to_dict() == {1: pytest.approx(12.0), 2: pytest.approx(15.0)}  # sync: generation is the wait


def test_a_nemo_rl_log_without_its_timing_block_is_refused_saying_so(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("\n".join(LOG.read_text().splitlines()[:6]) + "\n")
    with pytest.raises(AdapterError, match="a NeMo-RL console log, but no timing block .*expected the `⏱️  Timing:`"):
        get_adapter("nemo_rl").parse(log)
