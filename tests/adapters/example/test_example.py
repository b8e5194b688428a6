"""The example adapter (the documented template): its fixture is what its toy loop writes, a spec with its table
launches through the pipeline, and its parse refuses other logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchbed.adapters.example import toyloop

from benchbed.adapter import get_adapter
from benchbed.errors import AdapterError, NotThisFrameworkError, SpecError
from benchbed.pipeline import execute
from benchbed.spec import build_spec
from benchbed.store import Store

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "example" / "sync-5steps" / "example-log.jsonl"


def test_the_fixture_is_what_the_toy_loop_writes(tmp_path: Path) -> None:
    assert toyloop.main(["--steps", "5", "--out", str(tmp_path / "log.jsonl")]) == 0
    assert (tmp_path / "log.jsonl").read_bytes() == FIXTURE.read_bytes()


def test_a_spec_with_its_table_runs_through_the_pipeline(tmp_path: Path) -> None:
    spec = build_spec({"name": "toy", "adapter": "example", "warmup_steps": 0,
                       "workload": {"steps": 3, "prompts_per_step": 2, "group_size": 2},
                       "example": {"update_s": 2.0, "sync_s": 0.0}})  # fmt: skip
    outcome = execute(spec, Store(tmp_path))
    assert outcome.record.status == "succeeded", outcome.record.error
    assert outcome.record.spec["example"] == {"update_s": 2.0, "sync_s": 0.0}
    trace = outcome.trace
    assert len(trace.of("trainer.step")) == 3 and len(trace.of("rollout")) == 12
    assert outcome.record.metrics["trainer_compute_ratio"].value == pytest.approx(
        6.0 / float((trace.of("trainer.step")["t1"] - trace.of("trainer.step")["t0"]).sum())
    )
    with pytest.raises(SpecError, match=r"field 'example.update_s': Input should be greater than 0"):
        build_spec({"name": "toy", "adapter": "example", "example": {"update_s": 0}})


def test_parse_refuses_other_logs_and_names_a_bad_line(tmp_path: Path) -> None:
    adapter = get_adapter("example")
    (tmp_path / "example-log.jsonl").write_text('{"step": 1, "data": {}}\n')
    with pytest.raises(NotThisFrameworkError, match="not a benchbed-example-log header"):
        adapter.parse(tmp_path)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(FIXTURE.read_text().splitlines()[0] + '\n{"kind": "step", "step": 1}\n')
    with pytest.raises(AdapterError, match=r"broken.jsonl:2: step record without field 'begin'"):
        adapter.parse(broken)
