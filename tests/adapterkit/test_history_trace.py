"""The kit's History -> trace through a key map: exact and pattern keys, percentages as ratios, unmapped numbers kept
as native rows, and a history without the step key refused as another framework's; a framework's own builder's
trace finished the same way (source, partial)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbed.adapterkit.histories import History, HistorySource
from benchbed.adapterkit.histories.history import frame_from_rows
from benchbed.adapterkit.history_trace import built_history_trace, history_trace
from benchbed.adapterkit.keymaps import load_keymap
from benchbed.errors import NotThisFrameworkError
from benchbed.trace import Trace, TraceBuilder, TraceMeta

KEYMAP = """
framework = "toy"
releases = ["1"]
identify = ["toy/*"]

[[key]]
native = "timing/step"
canonical = "trainer.step"
unit = "s"
role = "step"

[[key]]
native = "timing/wait"
canonical = "trainer.wait"
unit = "s"
role = "component"

[[key]]
native = "efficiency/idle_pct"
canonical = "framework.trainer_idle_ratio"
unit = "%"
role = "framework"

[[key]]
native = "toy/*"
canonical = "framework.toy_*"
unit = "count"
role = "framework"
"""


def _history(rows: list[tuple[int, float | None, dict[str, float]]]) -> History:
    return History(HistorySource("jsonl", "r1", "/runs/r1.jsonl"), frame_from_rows(rows))


def _rows(trace) -> dict[tuple[str, int], float]:
    events = trace.events
    return {(str(k), int(s)): float(v) for k, s, v in zip(events["key"], events["step"], events["value"], strict=True)}


@pytest.fixture
def keymap(tmp_path: Path):
    (tmp_path / "keymap.toml").write_text(KEYMAP)
    return load_keymap(tmp_path / "keymap.toml")


def test_keys_become_canonical_framework_and_native_rows(keymap) -> None:
    history = _history([
        (1, 100.0, {"timing/step": 10.0, "timing/wait": 4.0, "efficiency/idle_pct": 40.0, "toy/dropped": 3.0}),
        (2, 110.0, {"timing/step": 12.0, "timing/wait": 3.0, "loss": 0.25}),
    ])  # fmt: skip
    trace = history_trace(history, keymap, adapter="toy", mode="async")
    assert _rows(trace) == {
        ("trainer.step", 1): 10.0, ("trainer.step", 2): 12.0,
        ("trainer.wait", 1): 4.0, ("trainer.wait", 2): 3.0,
        ("framework.trainer_idle_ratio", 1): 0.4,
        ("framework.toy_dropped", 1): 3.0,
        ("native.toy.loss", 2): 0.25,
    }  # fmt: skip
    assert set(trace.events["kind"]) == {"agg"} and set(trace.events["actor"]) == {"trainer"}
    assert (trace.meta.adapter, trace.meta.framework, trace.meta.mode) == ("toy", "toy", "async")
    assert trace.meta.extra["history"] == {"tracker": "jsonl", "run_id": "r1", "uri": "/runs/r1.jsonl"}


def test_a_history_without_a_step_key_is_another_frameworks(keymap) -> None:
    with pytest.raises(NotThisFrameworkError, match=r"^not a toy history: /runs/r1.jsonl logs none of timing/step$"):
        history_trace(_history([(1, None, {"loss": 1.0})]), keymap, adapter="toy")


def test_within_holds_for_every_history(tmp_path: Path) -> None:
    """A timer after the step's timer is added to the step; one nested in another with a canonical key of its own
    is carved out of that one; one nested without a canonical key is kept native and never counted twice."""
    (tmp_path / "keymap.toml").write_text(
        KEYMAP
        + """
[[key]]
native = "timing/eval"
canonical = "trainer.other"
unit = "s"
role = "component"
within = "after_step"
modes = ["async"]

[[key]]
native = "timing/sync"
canonical = "trainer.weight_sync"
unit = "s"
role = "component"
within = "timing/wait"

[[key]]
native = "timing/sync_inner"
unit = "s"
role = "component"
within = "timing/sync"
"""
    )
    keymap = load_keymap(tmp_path / "keymap.toml")
    history = _history([
        (1, 100.0, {"timing/step": 10.0, "timing/wait": 4.0, "timing/sync": 1.5, "timing/sync_inner": 1.0,
                    "timing/eval": 2.0}),
        (2, 110.0, {"timing/step": 12.0, "timing/wait": 3.0}),
    ])  # fmt: skip
    rows = _rows(history_trace(history, keymap, adapter="toy", mode="async"))
    assert {k: v for k, v in rows.items() if k[0] != "native.toy.timing/sync_inner"} == {
        ("trainer.step", 1): 12.0, ("trainer.step", 2): 12.0,
        ("trainer.wait", 1): 2.5, ("trainer.wait", 2): 3.0,
        ("trainer.weight_sync", 1): 1.5,
        ("trainer.other", 1): 2.0,
    }  # fmt: skip
    assert rows[("native.toy.timing/sync_inner", 1)] == 1.0
    sync = _rows(history_trace(history, keymap, adapter="toy", mode="sync"))  # the eval entry holds in async only
    assert sync[("trainer.step", 1)] == 10.0 and sync[("native.toy.timing/eval", 1)] == 2.0


def test_a_frameworks_own_builder_is_finished_as_every_historys_trace() -> None:
    """The builder's rows and metadata stay; the history's source is added where the builder left it out, kept where
    the builder placed it; a partial history makes a partial trace; the trace's zero is placed on the epoch."""
    history = _history([(1, 100.0, {"toy/steps": 3.0})])
    history.partial = True

    def build(h: History, extra: dict[str, object]) -> Trace:
        builder = TraceBuilder()
        for step, _, values in h.rows():
            builder.agg("trainer.step", step, values["toy/steps"] * 2, actor="trainer")
        return builder.build(TraceMeta(adapter="toy", extra=extra))

    trace = built_history_trace(history, lambda h: build(h, {"segments": 1}))
    assert _rows(trace) == {("trainer.step", 1): 6.0}
    assert trace.meta.partial and list(trace.meta.extra) == ["segments", "history", "epoch_origin"]
    assert trace.meta.extra["epoch_origin"] == 100.0  # no run start recorded: the first row's wall time
    assert trace.meta.extra["history"] == {"tracker": "jsonl", "run_id": "r1", "uri": "/runs/r1.jsonl"}
    placed = built_history_trace(history, lambda h: build(h, {"history": {"tracker": "own"}, "segments": 1}))
    assert list(placed.meta.extra) == ["history", "segments", "epoch_origin"]
    assert placed.meta.extra["history"] == {"tracker": "own"}
