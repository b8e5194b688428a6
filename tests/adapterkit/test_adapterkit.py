"""The adapter kit: line reading, discovery, group statistics, step breakdown, bulk rows, hand-off and key maps."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbed import keys as K
from benchbed.adapterkit.adapter import FrameworkAdapter
from benchbed.adapterkit.artifacts import discover
from benchbed.adapterkit.breakdown import TOLERANCE_S, StepBreakdown, emit_step
from benchbed.adapterkit.groups import group_stats
from benchbed.adapterkit.handoff import HANDOFF_FILE, Handoff, handoff_files, read_handoff
from benchbed.adapterkit.keymaps import ROLES, load_keymap, pattern
from benchbed.adapterkit.lines import JsonLines, first_json_object, loads_finite, loads_lenient
from benchbed.adapterkit.rows import AggRows, EventRows
from benchbed.errors import AdapterError, NotThisFrameworkError, TraceError
from benchbed.runs import by_name
from benchbed.trace import TraceBuilder, TraceMeta


@pytest.mark.parametrize(
    ("content", "expected"),
    [(b'\n  \n{"format": "x", "v": NaN}\nnot json\n', {"format": "x", "v": math.nan}), (b"[1, 2]\n", None),
     (b"\x00\xff garbage\n", None), (b"", None), (b'{"cut": ', None)],
)  # fmt: skip
def test_first_json_object_skips_blank_lines_and_refuses_the_rest(tmp_path: Path, content: bytes, expected) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    got = first_json_object(path)
    assert got == expected if expected is None else (got is not None and got["format"] == "x" and math.isnan(got["v"]))


def test_json_lines_name_every_skipped_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"a": 1}\n\nnot json\n[1, 2]\n{"b": NaN}\n{"c": 1e999}\n{"d": 2}\n{"e": 3, "cut')
    warnings: list[str] = []
    lines = JsonLines(path, warnings, loads_finite, finite=True)
    assert list(lines) == [(1, {"a": 1}), (7, {"d": 2})]
    assert lines.truncated
    assert [w.split(": ", 2)[1] for w in warnings] == [
        "skipped line that is not JSON (JSONDecodeError",
        "skipped line that is not a JSON object",
        "skipped row with non-finite value NaN",
        "skipped row with a non-finite value",
        "skipped truncated last line (13 bytes, no closing newline",
    ]
    assert [w.split(":")[1] for w in warnings] == ["3", "4", "5", "6", "8"]


def test_lenient_loads_accepts_what_python_json_writes() -> None:
    assert math.isnan(loads_lenient(b'{"x": NaN}')["x"])
    with pytest.raises(ValueError):
        loads_lenient(b"{oops")


@pytest.mark.parametrize("loads", [loads_lenient, loads_finite])
def test_a_value_nested_too_deep_is_a_value_error_not_a_recursion_error(loads) -> None:
    with pytest.raises(ValueError, match="nested deeper than the JSON parser reads"):
        loads(b'{"y": ' + b"[" * 200_000 + b"]" * 200_000 + b', "x": NaN}')


def test_discovery_sorts_files_reads_the_handoff_and_keeps_refusals(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "logs" / "a.log").write_text("x")
    (tmp_path / "checkpoints" / "b.log").write_text("x")
    (tmp_path / "other.jsonl").write_text("{}")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / HANDOFF_FILE).write_text(handoff_files(Handoff(adapter="x", mode="nested"))[HANDOFF_FILE])
    (tmp_path / HANDOFF_FILE).write_text(handoff_files(Handoff(adapter="x", mode="own", extra_field=3))[HANDOFF_FILE])

    def classify(path: Path) -> list[str]:
        if path.suffix == ".jsonl":
            raise NotThisFrameworkError(f"not mine: {path}")
        return ["log"] if path.suffix == ".log" else []

    found = discover(tmp_path, classify)
    assert found.of("log") == [tmp_path / "logs" / "a.log"]  # checkpoints/ is not read
    assert found.rejected == [f"not mine: {tmp_path / 'other.jsonl'}"]
    assert found.handoff is not None and found.handoff.mode == "own" and found.handoff.get("extra_field") == 3


def test_unreadable_handoff_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / HANDOFF_FILE).write_text('{"mode": "x"}')
    warnings: list[str] = []
    assert read_handoff(tmp_path, warnings) is None
    assert warnings and "unreadable benchbed hand-off file" in warnings[0]


@pytest.mark.parametrize(
    ("rewards", "std", "n", "zero"),
    [([1.0, 0.0, 1.0, 0.0], 0.5, 4, False), ([1.0, 1.0, math.nan], 0.0, 2, True), ([0.5], 0.0, 1, True),
     ([math.nan, math.inf], math.nan, 0, False), ([], math.nan, 0, False)],
)  # fmt: skip
def test_group_statistics_have_one_nan_policy(rewards: list[float], std: float, n: int, zero: bool) -> None:
    stats = group_stats(rewards)
    assert (stats.n, stats.size, stats.zero_advantage) == (n, len(rewards), zero)
    assert stats.std == pytest.approx(std, nan_ok=True)


def test_breakdown_clamps_the_remainder_and_names_overrun_steps() -> None:
    bd = StepBreakdown()
    parts = bd.settle(1, 10.0, {K.TRAINER_WAIT: 6.0, K.TRAINER_COMPUTE: 3.0}, "m.jsonl:1")
    assert parts == {K.TRAINER_WAIT: 6.0, K.TRAINER_COMPUTE: 3.0, K.TRAINER_WEIGHT_SYNC: 0.0,
                     K.TRAINER_CHECKPOINT: 0.0, K.TRAINER_OTHER: 1.0}  # fmt: skip
    assert bd.settle(2, 10.0, {K.TRAINER_WAIT: 10.0 + TOLERANCE_S / 2}, "")[K.TRAINER_OTHER] == 0.0
    assert bd.warning() is None  # within the tolerance
    assert bd.settle(3, 10.0, {K.TRAINER_WAIT: 6.0, K.TRAINER_COMPUTE: 5.0}, "m.jsonl:3")[K.TRAINER_OTHER] == 0.0
    warning = bd.warning()
    assert warning is not None and "trainer.other clamped to 0 in 1 step(s)" in warning
    assert "step 3 (by 1.000 s, m.jsonl:3)" in warning
    wait = StepBreakdown(remainder=K.TRAINER_WAIT)
    assert wait.settle(1, 10.0, {K.TRAINER_COMPUTE: 4.0, K.TRAINER_OTHER: 1.0})[K.TRAINER_WAIT] == 5.0


def test_a_settled_step_becomes_its_rows_with_unlogged_timers_as_zero() -> None:
    bd = StepBreakdown(remainder=K.TRAINER_WAIT)
    parts = bd.settle(4, 10.0, {K.TRAINER_COMPUTE: 7.0, K.TRAINER_CHECKPOINT: math.nan})  # checkpoint not logged
    assert parts[K.TRAINER_CHECKPOINT] == 0.0 and parts[K.TRAINER_WAIT] == 3.0
    b = TraceBuilder()
    emit_step(b, 4, 10.0, parts, leave=(K.TRAINER_WAIT,))
    rows = b.build(TraceMeta(adapter="t")).validate().events
    assert rows["key"].tolist() == [K.TRAINER_STEP, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT,
                                    K.TRAINER_OTHER]  # fmt: skip
    assert rows["value"].tolist() == [10.0, 7.0, 0.0, 0.0, 0.0]
    assert set(rows["step"]) == {4} and set(rows["actor"]) == {"trainer"}


def test_bulk_rows_go_through_the_builder() -> None:
    b = TraceBuilder()
    aggs = AggRows()
    aggs.add(K.TRAINER_STEP, 1, 2.5, "trainer")
    aggs.add(K.TRAINER_WAIT, 1, 1.0, "trainer", '{"segment":1}')
    aggs.flush(b)
    rows = EventRows()
    rows.add(K.ROLLOUT, "span", 1, 0.0, 2.0, 1.0, "generator", "s0", "g0", 0, 0, 0, "ok")
    rows.flush(b)
    assert len(aggs) == 0 and len(rows) == 0 and len(b) == 3
    events = b.build(TraceMeta(adapter="t")).validate().events
    assert events["kind"].tolist() == ["agg", "agg", "span"]
    assert events["attrs"].tolist() == ["", '{"segment":1}', ""]
    assert events["v_train"].tolist() == [-1, -1, 0]


def test_number_rows_leave_out_nan_and_the_steps_not_kept() -> None:
    b = TraceBuilder()
    aggs = AggRows()
    steps = np.array([0, 1, 2, 3])
    aggs.extend_numbers("native.loss", steps, np.array([9.0, 0.5, math.nan, 0.25]), keep=steps >= 1)
    aggs.extend_numbers(K.TRAINER_STEP, steps[1:], np.array([10.0, 11.0, 12.0]), "trainer")
    aggs.extend_numbers("native.none", steps, np.full(4, math.nan))
    aggs.flush(b)
    events = b.build(TraceMeta(adapter="t")).validate().events
    assert list(zip(events["key"], events["step"], events["value"], events["actor"], strict=True)) == [
        ("native.loss", 1, 0.5, ""), ("native.loss", 3, 0.25, ""),
        (K.TRAINER_STEP, 1, 10.0, "trainer"), (K.TRAINER_STEP, 2, 11.0, "trainer"),
        (K.TRAINER_STEP, 3, 12.0, "trainer"),
    ]  # fmt: skip


def test_settle_many_gives_what_settle_gives_step_by_step() -> None:
    steps = np.array([1, 2, 3])
    total = np.array([10.0, 10.0, 2.0])
    named = {K.TRAINER_WAIT: np.array([6.0, 6.0, 0.0]), K.TRAINER_COMPUTE: np.array([3.0, 5.0, 0.1])}
    one, many = StepBreakdown(), StepBreakdown()
    expected = [one.settle(int(s), float(t), {k: float(v[i]) for k, v in named.items()}, f"f:{s}")
                for i, (s, t) in enumerate(zip(steps, total, strict=True))]  # fmt: skip
    parts = many.settle_many(steps, total, named, ["f:1", "f:2", "f:3"])
    assert [{k: float(v[i]) for k, v in parts.items()} for i in range(3)] == expected
    assert many.warning() == one.warning() and "step 2 (by 1.000 s, f:2)" in (many.warning() or "")


def test_builder_blocks_keep_row_order_and_types() -> None:
    """Single rows, list blocks, array blocks and scalar columns come out in the order they were added."""
    b = TraceBuilder()
    b.agg(K.TRAINER_STEP, 1, 2.0, actor="trainer")
    aggs = AggRows()
    aggs.extend(K.TRAINER_WAIT, np.array([1, 2]), np.array([0.5, 0.25]), "trainer")
    aggs.add(K.TRAINER_STEP, 2, 3.0, "trainer")
    aggs.flush(b)
    b.extend_columns(2, {"key": "native.x", "kind": "agg", "step": [3, 4], "value": (1.0, 2.0)})
    assert len(b) == 6 and b.column("step") == [1, 1, 2, 2, 3, 4]
    events = b.build(TraceMeta(adapter="t")).validate().events
    assert events["key"].astype(str).tolist() == [K.TRAINER_STEP, K.TRAINER_WAIT, K.TRAINER_WAIT, K.TRAINER_STEP,
                                                  "native.x", "native.x"]  # fmt: skip
    assert events["value"].tolist() == [2.0, 0.5, 0.25, 3.0, 1.0, 2.0]
    assert events["actor"].astype(str).tolist() == ["trainer"] * 4 + ["", ""]
    assert str(events["step"].dtype) == "int64" and isinstance(events["key"].dtype, pd.CategoricalDtype)
    with pytest.raises(TraceError, match="column 'step': 1 values for 2 rows"):
        b.extend_columns(2, {"key": "native.x", "kind": "agg", "step": np.array([1])})


def _write_map(path: Path, body: str) -> Path:
    path.write_text('framework = "x"\nreleases = ["0.4", "0.9", "abc123"]\n' + body)
    return path


def test_key_map_entries_apply_by_release_and_mode(tmp_path: Path) -> None:
    km = load_keymap(_write_map(tmp_path / "m.toml", """
[[key]]
native = "t/step"
canonical = "trainer.step"
unit = "s"
role = "component"
[[key]]
native = "t/new"
canonical = "trainer.compute"
unit = "s"
role = "component"
first = "0.9"
modes = ["async"]
[[key]]
native = "t/old"
canonical = "trainer.wait"
unit = "s"
role = "component"
last = "0.4"
[[key]]
native = "agg/*/error/*"
role = "native"
[lines]
step = '^step (?P<step>\\d+) took'
"""))  # fmt: skip
    assert km.mapping("0.4", "component") == {"t/step": "trainer.step", "t/old": "trainer.wait"}
    assert list(km.across_releases("component")) == ["t/step", "t/old", "t/new"]  # oldest release first
    assert km.lines["step"].match("step 12 took 3 s").group("step") == "12"
    assert km.mapping("0.9", "component", "async") == {"t/step": "trainer.step", "t/new": "trainer.compute"}
    assert km.mapping("0.9", "component", "sync") == {"t/step": "trainer.step"}
    keep = km.matcher("0.9", "native")
    assert keep.match("agg/all/error/Timeout") and not keep.match("agg/error/Timeout")
    assert [km.nearest(v) for v in ("0.9.1", "0.12.0", "0.2.0", "abc123", "dev")] == [
        ("0.9", True), ("0.9", False), ("0.4", False), ("abc123", True), ("abc123", False)]  # fmt: skip


def test_key_map_relations_are_entry_fields_selected_beside_the_role(tmp_path: Path) -> None:
    """How a key relates to the step or its process is data (`within`, `step_offset`, `process`, `rate_timer`)."""
    km = load_keymap(_write_map(tmp_path / "m.toml", """
[[key]]
native = "t/wait"
canonical = "trainer.wait"
unit = "s"
role = "component"
[[key]]
native = "t/offload"
canonical = "trainer.other"
unit = "s"
role = "component"
within = "t/wait"
[[key]]
native = "t/ref_update"
canonical = "trainer.other"
unit = "s"
role = "component"
within = "t/wait"
step_offset = 1
[[key]]
native = "t/test"
canonical = "trainer.other"
unit = "s"
role = "component"
within = "after_step"
[[key]]
native = "t/tok_per_s"
canonical = "samples.trained_tokens"
unit = "tokens/s"
role = "counter"
rate_timer = "t/wait"
[[key]]
native = "loss/*"
role = "marker"
process = "trainer"
[[key]]
native = "progress/*"
role = "marker"
process = "orchestrator"
"""))  # fmt: skip
    assert km.mapping("0.9", "component", within="step") == {"t/wait": "trainer.wait"}
    assert km.mapping("0.9", "component", within="after_step") == {"t/test": "trainer.other"}
    nested = km.across("component", within="t/wait")
    assert [(e.native, e.step_offset) for e in nested] == [("t/offload", 0), ("t/ref_update", 1)]
    assert km.across("counter")[0].rate_timer == "t/wait"
    trainer = pattern(km.across("marker", process="trainer"))
    assert trainer.match("loss/mean") and not trainer.match("progress/total")
    assert km.natives("0.9", "marker") == ("loss/*", "progress/*")
    assert km.at("0.9", "marker", process="") == []


def test_key_map_refuses_unknown_keys_units_releases_roles_and_line_patterns(tmp_path: Path) -> None:
    for body, message in (
        ('[[key]]\nnative = "a"\ncanonical = "trainer.idle"\nrole = "native"\n', "not in benchbed/keys.py"),
        ('[[key]]\nnative = "a"\nunit = "parsecs"\nrole = "native"\n', "unit 'parsecs'"),
        ('[[key]]\nnative = "a"\nrole = "native"\nfirst = "1.0"\n', "release '1.0' is not in releases"),
        ("[lines]\nstep = '^Step (\\d+'\n", r"\[lines\] step: not a regular expression \(missing \)"),
        (
            '[[key]]\nnative = "a"\nrole = "native"\n[[key]]\nnative = "b"\nrole = "outside_step"\n',
            r"\.toml: \[\[key\]\] #2 \('b'\): role 'outside_step' is not one of \['step', 'component', ",
        ),
        (
            '[[key]]\nnative = "a"\nrole = "component"\nwithin = "t/nowhere"\n',
            r"#1 \('a'\): within 't/nowhere' is neither one of \['step', 'after_step', 'beside'\] nor a native key",
        ),
        ('[[key]]\nnative = "a"\nrole = "counter"\nwithin = "beside"\n', "`within` is for component and native keys"),
        ('[[key]]\nnative = "a"\nrole = "component"\nstep_offset = 2\n', "step_offset must be 0 or 1, not 2"),
        ('[[key]]\nnative = "a"\nrole = "marker"\nprocess = "learner"\n', "process 'learner' is not one of"),
        ('[[key]]\nnative = "a"\nunit = "s"\nrole = "counter"\nrate_timer = "a"\n', "rate_timer is for a rate"),
        (
            '[[key]]\nnative = "a"\nunit = "tokens/s"\nrole = "counter"\nrate_timer = "b"\n',
            "rate_timer 'b' is not the native key of an entry",
        ),
        ('[[key]]\nnative = "a"\nrole = "native"\nwithn = "step"\n', r"unknown field\(s\) \['withn'\]"),
    ):
        with pytest.raises(AdapterError, match=message):
            load_keymap(_write_map(tmp_path / f"{len(body)}-{len(message)}.toml", body))


@pytest.mark.parametrize(
    "framework", ["verl", "slime", "prime_rl", "trl", "example", "example_history", "miles", "tinker_cookbook"]
)
def test_every_adapter_key_map_loads_with_the_shared_roles(framework: str) -> None:
    root = Path(__file__).resolve().parents[2] / "adapters" / framework / "keymap.toml"
    km = load_keymap(root)
    assert km.entries and {e.role for e in km.entries} <= set(ROLES)
    assert json.dumps([e.native for e in km.entries])  # plain data


def test_framework_adapters_import_their_code_on_first_use(tmp_path: Path) -> None:
    """Loading an adapter (as `benchbed --help` and spec loading do) imports no renderer or parser; a call does."""
    code = """
import sys
from benchbed.adapter import get_adapter
names = ("verl", "slime", "prime_rl", "example")
adapters = [get_adapter(n) for n in names]
loaded = lambda: sorted(m for m in sys.modules if m.split(".")[2:3] in [[n] for n in names]
                        and m.rsplit(".", 1)[1] in ("render", "parse", "discover"))
print(loaded())
adapters[0].find_runs(sys.argv[1])
adapters[3].find_runs(sys.argv[1])
print(loaded())
"""
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    # finding runs imports each adapter's discover module only, never its parser
    assert run.stdout.splitlines() == [
        "[]",
        "['benchbed.adapters.example.discover', 'benchbed.adapters.verl.discover']",
    ]


class _Toy(FrameworkAdapter):
    name = "toy"
    renderer = "benchbed.adapters.example.render:render_plan"
    parser = "benchbed.adapterkit.lines:first_content_line"  # not a parser: any function named by reference
    run_marker = by_name(("toy.log",))


def test_framework_adapter_resolves_references_and_keeps_functions_unbound(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "toy.log").write_text("\n\nfirst\n")
    assert _Toy().find_runs(tmp_path) == [tmp_path / "a" / "b"]
    assert _Toy().parse(tmp_path / "a" / "b" / "toy.log") == b"first\n"


def test_chrome_trace_pairs_begin_and_end_events_per_track(tmp_path: Path) -> None:
    from benchbed.adapterkit.chrome_trace import complete_events

    lines = [
        {"name": "outer", "ph": "B", "pid": 0, "tid": 7, "ts": 1_000_000, "args": {"track": "Task-1"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 7, "ts": 0, "args": {"name": "Task-1"}},
        {"name": "other", "ph": "B", "pid": 0, "tid": 8, "ts": 1_500_000},
        {"name": "inner", "ph": "B", "pid": 0, "tid": 7, "ts": 2_000_000},
        {"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": 2_500_000, "dur": 250_000},
        {"name": "inner", "ph": "E", "pid": 0, "tid": 7, "ts": 3_000_000},
        {"name": "outer", "ph": "E", "pid": 0, "tid": 7, "ts": 4_000_000, "args": {"step": 3}},
        {"name": "stray", "ph": "E", "pid": 0, "tid": 9, "ts": 4_500_000},
    ]
    path = tmp_path / "trace_events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    warnings: list[str] = []
    table, truncated = complete_events(path, warnings)
    got = list(zip(table["name"], table["t0"], table["t1"], table["line"], strict=True))
    assert got == [("outer", 1.0, 4.0, 1), ("inner", 2.0, 3.0, 4), ("x", 2.5, 2.75, 5)]  # by the line each began
    assert table["args"][0] == {"track": "Task-1", "step": 3} and not truncated  # B's args, then E's
    assert warnings == [f"{path}:8: skipped 'E' event with no 'B' open on pid 0 tid 9",
                        f"{path}:3: 'B' event 'other' never ended; left out"]  # fmt: skip


def test_a_key_map_may_extend_another_frameworks(tmp_path: Path) -> None:
    body = 'extends = "base"\n[[key]]\nnative = "a"\nrole = "native"\n'
    assert load_keymap(_write_map(tmp_path / "fork.toml", body)).extends == "base"
    with pytest.raises(AdapterError, match="`extends` must name a framework"):
        load_keymap(_write_map(tmp_path / "bad.toml", body.replace('"base"', "1")))
