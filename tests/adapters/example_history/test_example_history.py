"""The history-based example adapter: a framework whose runs are per-step key/value histories costs a key map and
under 150 lines of Python; its runs launch through the pipeline, and the same keys read from another history
source (TensorBoard, with tensorboard's own writer) give the same trace rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.errors import NotThisFrameworkError
from benchbed.pipeline import execute
from benchbed.spec import build_spec
from benchbed.store import Store

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "adapters" / "example_history"
FIXTURE = ROOT / "tests" / "fixtures" / "example_history" / "run-6-steps"
ADAPTER = get_adapter("example_history")


def _rows(trace) -> list[tuple[str, int, float]]:
    events = trace.events.sort_values(["step", "key"])
    return [(str(k), int(s), float(v)) for k, s, v in zip(events["key"], events["step"], events["value"], strict=True)]


def test_the_package_is_a_key_map_and_under_150_lines_of_python() -> None:
    assert (PACKAGE / "keymap.toml").is_file()
    assert sum(len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")) <= 150


def test_a_spec_runs_through_the_pipeline(tmp_path: Path) -> None:
    spec = build_spec({"name": "hist", "adapter": "example_history", "warmup_steps": 0,
                       "workload": {"steps": 4, "prompts_per_step": 2, "group_size": 4},
                       "example_history": {"update_s": 2.0, "seed": 1}})  # fmt: skip
    outcome = execute(spec, Store(tmp_path))
    assert outcome.record.status == "succeeded", outcome.record.error
    logged = [json.loads(line) for line in (outcome.run_dir / "history.jsonl").read_text().splitlines()]
    steps = [row["timing/step"] for row in logged]
    assert outcome.record.metrics["step_time_mean_s"].value == pytest.approx(sum(steps) / 4)
    assert outcome.record.metrics["trainer_compute_ratio"].value == pytest.approx(4 * 2.0 / sum(steps))
    assert [row["batch/samples"] for row in logged] == [8] * 4


def test_the_same_keys_in_tensorboard_give_the_same_trace(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard", reason="the `tensorboard` extra is not installed")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for line in (FIXTURE / "history.jsonl").read_text().splitlines():
        row = json.loads(line)
        values = [summary_pb2.Summary.Value(tag=k, simple_value=v) for k, v in row.items() if k != "step"]
        writer.add_event(event_pb2.Event(wall_time=1000.0 + row["step"], step=row["step"],
                                         summary=summary_pb2.Summary(value=values)))  # fmt: skip
    writer.close()
    from_jsonl, from_tensorboard = ADAPTER.parse(FIXTURE), ADAPTER.parse(tmp_path)
    assert from_tensorboard.meta.extra["history"]["tracker"] == "tensorboard"
    assert [(k, s) for k, s, _ in _rows(from_tensorboard)] == [(k, s) for k, s, _ in _rows(from_jsonl)]
    # TensorBoard keeps scalars as float32
    assert [v for *_, v in _rows(from_tensorboard)] == pytest.approx([v for *_, v in _rows(from_jsonl)], rel=1e-6)


def test_a_history_without_the_step_key_is_not_this_frameworks(tmp_path: Path) -> None:
    (tmp_path / "history.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    with pytest.raises(NotThisFrameworkError, match=r"not a histloop history: .* logs none of timing/step$"):
        ADAPTER.parse(tmp_path)
