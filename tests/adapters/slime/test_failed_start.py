"""A slime log that ends in a traceback before its first step is a failed run, not "not a slime run": ingest keeps a
`failed` record with the traceback's last line. The log is the sync fixture's start (slime's arguments block) followed
by the traceback slime 624b824 gives when `create_rollout_manager` finds an empty dataset
(slime/ray/placement_group.py, `assert args.num_rollout > 0`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchbed.adapters.slime import SlimeAdapter

from benchbed.errors import NotThisFrameworkError, RunFailedError
from benchbed.pipeline import ingest
from benchbed.store import Store

FIX = Path(__file__).parents[2] / "fixtures" / "slime"
TRACEBACK = """Traceback (most recent call last):
  File "/root/slime/train.py", line 104, in <module>
    train(args)
  File "/root/slime/train.py", line 19, in train
    rollout_manager, num_rollout_per_epoch = create_rollout_manager(args, pgs["rollout"])
  File "/root/slime/slime/ray/placement_group.py", line 244, in create_rollout_manager
    assert args.num_rollout > 0
AssertionError
"""


def started_then_died(tmp_path: Path, traceback: str = TRACEBACK) -> Path:
    head = (FIX / "sync_colocated_624b824" / "run.log").read_text().splitlines(keepends=True)[:13]
    log = tmp_path / "run.log"
    log.write_text("".join(head) + traceback)
    return log


def test_a_log_that_died_before_its_first_step_is_a_failed_run(tmp_path: Path) -> None:
    log = started_then_died(tmp_path)
    with pytest.raises(RunFailedError) as caught:
        SlimeAdapter().parse(log)
    assert str(caught.value) == f"{log}:21: the slime run failed before its first step: AssertionError"
    record = json.loads((ingest(log, "slime", Store(tmp_path / "s")).run_dir / "record.json").read_text())
    assert record["status"] == "failed" and record["adapter"]["framework"] == "slime"
    assert "assert args.num_rollout > 0" in record["error"]["log_tail"]


def test_a_traceback_slime_did_not_write_is_still_refused(tmp_path: Path) -> None:
    log = tmp_path / "other.log"
    log.write_text(TRACEBACK.replace("slime", "app"))
    with pytest.raises(NotThisFrameworkError, match="not a slime run"):
        SlimeAdapter().parse(log)
