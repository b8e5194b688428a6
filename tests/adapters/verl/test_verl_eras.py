"""verl eras and impossible input: pre-0.2 timers, gaps, interleaved config, negative, NaN, null."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from benchbed.adapters.verl import VerlAdapter
from benchbed.adapters.verl.records import read_console
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchbed import keys as K
from benchbed.errors import AdapterError
from benchbed.metrics import compute_metrics

ADAPTER = VerlAdapter()
PHASES = {"gen": 21.47, "ref": 4.36, "values": 5.8, "adv": 0.109, "update_critic": 15.664, "update_actor": 20.314}


def agg(trace, key: str) -> dict[int, float]:
    rows = trace.of(key)
    return dict(zip(rows["step"].tolist(), rows["value"].tolist(), strict=True))


def jsonl(path: Path, records: list[tuple[int, dict]]) -> Path:
    path.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in records))
    return path


def timers(step: float, gen: float, update: float = 5.0) -> dict[str, float]:
    return {"timing_s/step": step, "timing_s/gen": gen, "timing_s/update_actor": update}


def test_pre_02_console_log_is_recognised_and_its_steps_are_phase_sums(tmp_path: Path) -> None:
    """The format verl's quickstart still shows: timing/<phase>, no timing/step, steps from 0."""
    lines = ["(main_task pid=412) Using LocalLogger is deprecated."]
    for step in range(4):
        pairs = [f"timing/{k}:{v + step:.3f}" for k, v in PHASES.items()] + ["critic/score/mean:0.512"]
        lines.append(f"(main_task pid=412) step:{step} - " + " - ".join(pairs))
    log = tmp_path / "quickstart.log"
    log.write_text("\n".join(lines) + "\n")
    trace = ADAPTER.parse(log)
    steps = agg(trace, K.TRAINER_STEP)
    assert sorted(steps) == [1, 2, 3, 4]  # shifted so the first step is 1
    for step in range(4):
        assert steps[step + 1] == pytest.approx(sum(round(v + step, 3) for v in PHASES.values()))
        assert agg(trace, K.TRAINER_WAIT)[step + 1] == pytest.approx(PHASES["gen"] + step)
        assert agg(trace, K.TRAINER_OTHER)[step + 1] == pytest.approx(0.0)
    assert trace.meta.extra["keymap"] == "0.1" and trace.meta.mode == "v0"
    warnings = " | ".join(trace.meta.warnings)
    assert "sum of its phase timers" in warnings and "lower bound" in warnings
    assert "shifted by +1" in warnings
    assert "no verl timing keys" not in warnings
    idle = compute_metrics(trace)["trainer_idle_ratio"].value
    expected = sum(PHASES["gen"] + s for s in (1, 2, 3)) / sum(steps[s] for s in (2, 3, 4))
    assert idle == pytest.approx(expected, rel=1e-4)


def test_missing_steps_in_the_middle_are_named(tmp_path: Path) -> None:
    records = [(s, timers(10.0, 4.0)) for s in [*range(1, 7), *range(19, 26)]]
    trace = ADAPTER.parse(jsonl(tmp_path / "m.jsonl", records))
    assert any("step(s) 7-18 are missing" in w and "12 step(s) in 1 gap(s)" in w for w in trace.meta.warnings)


def test_negative_durations_are_refused_and_named(tmp_path: Path) -> None:
    records = [(s, timers(53.3, -30.0 if s == 3 else 4.0)) for s in range(1, 6)]
    trace = ADAPTER.parse(jsonl(tmp_path / "n.jsonl", records))
    assert 3 not in agg(trace, K.TRAINER_STEP)
    assert any("negative durations (timing_s/gen) at step(s) 3" in w for w in trace.meta.warnings)
    metrics = compute_metrics(trace)
    assert 0.0 <= metrics["trainer_idle_ratio"].value <= 1.0
    assert metrics["trainer_idle_ratio"].value == pytest.approx(4.0 / 53.3)


def test_bare_nan_and_infinity_tokens_drop_the_value_not_the_step(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    path.write_text(
        '{"step": 1, "data": {"timing_s/step": 10.0, "timing_s/gen": 4.0, "actor/grad_norm": NaN}}\n'
        '{"step": 2, "data": {"timing_s/step": 10.0, "timing_s/gen": 2.0, "actor/pg_loss": Infinity}}\n'
        '{"step": 3, "data": {"timing_s/step": 10.0, "timing_s/gen": -Infinity}}\n'
    )
    trace = ADAPTER.parse(path)
    assert agg(trace, K.TRAINER_STEP) == {1: 10.0, 2: 10.0, 3: 10.0}
    assert agg(trace, K.TRAINER_WAIT) == {1: 4.0, 2: 2.0, 3: 0.0}
    warnings = " | ".join(trace.meta.warnings)
    assert "actor/grad_norm is NaN or infinite at step(s) 1" in warnings
    assert "timing_s/gen is NaN or infinite at step(s) 3" in warnings
    assert "not a file-logger record" not in warnings


def test_a_null_step_time_is_reported(tmp_path: Path) -> None:
    records = [(1, timers(10.0, 4.0)), (2, {**timers(10.0, 4.0), "timing_s/step": None}), (3, timers(10.0, 4.0))]
    trace = ADAPTER.parse(jsonl(tmp_path / "null.jsonl", records))
    assert sorted(agg(trace, K.TRAINER_STEP)) == [1, 3]
    assert any("step timer is null or not a number at step(s) 2" in w for w in trace.meta.warnings)


def test_a_printed_config_interleaved_with_other_processes_is_read_whole(tmp_path: Path) -> None:
    config = [
        "{'actor_rollout_ref': {'actor': {'ppo_mini_batch_size': 2},",
        "                       'rollout': {'n': 4, 'n_gpus_per_node': 8}},",
        " 'data': {'train_batch_size': 16},",
        " 'trainer': {'total_training_steps': 3,",
        "             'use_v1': True,",
        "             'v1': {'trainer_mode': 'colocate_async'}}}",
    ]
    lines = []
    for i, text in enumerate(config):
        lines.append(f"(TaskRunnerV1 pid=77) {text}")
        lines.append(f"(vLLMHttpServer pid={900 + i}) INFO: loading shard {i}")
    lines.append("(TaskRunnerV1 pid=77) step:1 - timing_s/step:10.0 - timing_s/gen:4.0")
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n")
    reading = read_console(path)
    assert reading.config is not None and "_partial" not in reading.config
    assert reading.config["trainer"]["v1"]["trainer_mode"] == "colocate_async"
    assert not any("de-duplicate" in w for w in reading.warnings)


_value = st.one_of(
    st.floats(-50, 500, allow_nan=False),
    st.just(math.nan),
    st.just(math.inf),
    st.none(),
    st.integers(0, 100),
)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.dictionaries(st.sampled_from(sorted(timers(1, 1)) + ["x/y"]), _value)),
        min_size=0,
        max_size=12,
    )
)
@example(records=[(1, {"timing_s/step": 1.0}), (2, {"timing_s/gen": 2.0, "timing_s/step": 0.0})])  # a step timed 0
def test_random_jsonl_never_gives_an_impossible_figure(tmp_path_factory, records) -> None:
    """Any file-logger JSONL (NaN/inf/negative/null values, gaps, repeats) parses or is refused with an
    AdapterError; no trainer figure is negative and every ratio is within [0, 1]."""
    path = tmp_path_factory.mktemp("verl") / "r.jsonl"
    path.write_text("".join(json.dumps({"step": s, "data": d}, allow_nan=True) + "\n" for s, d in records) or "\n")
    try:
        trace = ADAPTER.parse(path)
    except AdapterError:
        return
    trainer = trace.events[trace.events["key"].astype(str).str.startswith("trainer.")]
    assert (trainer["value"].dropna() >= 0).all()
    for name, metric in compute_metrics(trace, warmup_steps=0).items():
        assert math.isfinite(metric.value), name
        if metric.unit == "ratio" and name.endswith(("idle_ratio", "other_ratio", "utilization")):
            assert -1e-9 <= metric.value <= 1 + 1e-9, (name, metric.value)
