"""`benchbed export`: Chrome Trace Event JSON checked on every adapter's fixtures and round-tripped against the
trace; CSV and parquet copies of the canonical trace; the CLI's files and errors."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from benchbed import export as export_module
from benchbed import keys as K
from benchbed.adapter import get_adapter
from benchbed.cli.main import cli
from benchbed.export import counter_series, export_perfetto, export_table
from benchbed.sim import simulate_spec
from benchbed.spec import build_spec
from benchbed.trace import Trace, TraceBuilder, TraceMeta, read_trace

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ADAPTER_FIXTURES = [
    ("verl", "verl/verl-0.9.1-v1_sync"), ("verl", "verl/verl-0.9.1-fully_async"),
    ("slime", "slime/sync_colocated_624b824"), ("slime", "slime/fully_async_swe"),
    ("prime_rl", "prime_rl/head-559b447"), ("prime_rl", "prime_rl/head-559b447-sandbox-failures"),
]  # fmt: skip
PHASES = {"X", "M", "C", "s", "f", "i"}


def sim_trace(steps: int = 6, **sim: Any) -> Trace:
    table = {"mode": "async", "concurrency": 16, "latency": {"dist": "lognormal", "mean": 30.0, "cv": 0.5},
             "train_step_time": 10.0, "weight_sync_time": 1.0, **sim}  # fmt: skip
    workload = {"prompts_per_step": 2, "group_size": 4, "steps": steps, "max_staleness": 1}
    return simulate_spec(build_spec({"name": "x", "adapter": "sim", "workload": workload, "sim": table}))


def load(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    assert set(doc) == {"traceEvents", "displayTimeUnit", "otherData"}
    return doc


def check_format(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every event well formed: known phase, integer pid/tid/ts, named processes and threads, paired flows."""
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} <= PHASES
    named_pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_tids = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in events:
        assert isinstance(e["pid"], int) and e["pid"] in named_pids
        if e["ph"] in ("X", "s", "f", "i"):
            assert isinstance(e["tid"], int) and (e["pid"], e["tid"]) in named_tids
        if e["ph"] != "M":
            assert isinstance(e["ts"], int) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] >= 0 and isinstance(e["args"], dict)
        if e["ph"] == "C":
            assert len(e["args"]) == 1 and all(isinstance(v, int) for v in e["args"].values())
    starts = Counter(e["id"] for e in events if e["ph"] == "s")
    ends = Counter(e["id"] for e in events if e["ph"] == "f")
    assert starts == ends and set(starts.values()) <= {1}
    return events


def span_seconds_by_name(trace: Trace) -> dict[str, float]:
    """The trace's timed span durations, under the names the export gives them."""
    out: dict[str, float] = defaultdict(float)
    spans = trace.events[(trace.events["kind"] == "span").to_numpy()]
    for key, status, t0, t1, step in zip(spans["key"].astype(str), spans["status"].astype(str), spans["t0"],
                                         spans["t1"], spans["step"], strict=True):  # fmt: skip
        if key == K.TRAINER_STEP:
            name = f"step {step}"
        elif key == K.ROLLOUT:
            name = f"rollout {status}"
        else:
            name = key.removeprefix("trainer.").removeprefix("sandbox.").removeprefix("generator.")
        out[name] += t1 - t0
    return out


@pytest.mark.parametrize(("adapter", "fixture"), ADAPTER_FIXTURES, ids=[f for _, f in ADAPTER_FIXTURES])
def test_every_adapter_fixture_exports_a_valid_timeline(adapter: str, fixture: str, tmp_path: Path) -> None:
    trace = get_adapter(adapter).parse(FIXTURES / fixture)
    out = tmp_path / "t.json"
    summary = export_perfetto(trace, out)
    doc = load(out)
    events = check_format(doc)
    assert doc["otherData"]["adapter"] == adapter
    x = [e for e in events if e["ph"] == "X"]
    assert x, "a fixture run has at least trainer steps"
    has_spans = bool(((trace.events["key"] == K.TRAINER_STEP) & (trace.events["kind"] == "span")).any())
    assert doc["otherData"]["reconstructed"] is (not has_spans) is summary.reconstructed
    exported: dict[str, float] = defaultdict(float)
    counts: Counter[str] = Counter()
    for e in x:
        exported[e["name"]] += e["dur"] / 1e6
        counts[e["name"]] += 1
    if has_spans:  # round trip: per name, durations sum to the trace's (1 µs rounding per span)
        expected = span_seconds_by_name(trace)
        assert set(exported) == set(expected)
        for name, seconds in expected.items():
            assert exported[name] == pytest.approx(seconds, abs=1e-6 * counts[name] + 1e-9), name
    else:  # reconstructed steps last as long as the logged per-step durations
        steps = trace.events[(trace.events["key"] == K.TRAINER_STEP).to_numpy()]
        logged = dict(zip(steps["step"], steps["value"], strict=True))
        for step, seconds in logged.items():
            assert exported[f"step {step}"] == pytest.approx(seconds, abs=1e-6), step
        assert all(e["args"]["reconstructed"] is True for e in x if e["pid"] == export_module.TRAINER_PID)


def test_sim_timeline_has_slots_flows_counters_and_rollout_args(tmp_path: Path) -> None:
    trace = sim_trace()
    out = tmp_path / "sim.json"
    export_perfetto(trace, out)
    events = check_format(load(out))
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    processes = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {"trainer", "generator"}
    slots = {name for pid, name in threads if name.startswith("slot/")}
    assert len(slots) == 16  # one thread per generator slot
    rollouts = trace.of(K.ROLLOUT)
    x = [e for e in events if e["ph"] == "X" and e["name"].startswith("rollout")]
    assert len(x) == len(rollouts)
    first = next(e for e in x if e["args"]["sample"] == "0")
    row = rollouts[rollouts["sample"] == "0"].iloc[0]
    assert first["args"] == {
        "sample": "0", "group": "0", "step": int(row["step"]), "v_start": int(row["v_start"]),
        "v_end": int(row["v_end"]), "v_train": int(row["v_train"]), "status": row["status"],
        "reward": pytest.approx(row["value"]), "staleness": int(row["v_train"] - row["v_start"]),
    }  # fmt: skip
    assert first["ts"] == round(row["t0"] * 1e6)
    trained = rollouts[(rollouts["status"] == "ok") & (rollouts["v_train"] >= 0)]
    flows = [e for e in events if e["ph"] == "f"]
    assert len(flows) == len(trained)
    compute = trace.of(K.TRAINER_COMPUTE).set_index("step")["t0"]
    by_id = {e["id"]: e for e in flows}
    sources = [e for e in events if e["ph"] == "s"]
    for s in sources[:20]:  # each arrow ends where the consuming step's compute starts
        assert by_id[s["id"]]["ts"] == round(compute[int(trace.of(K.ROLLOUT).iloc[s["id"]]["step"])] * 1e6)
    counters = defaultdict(list)
    for e in (e for e in events if e["ph"] == "C"):
        counters[e["name"]].append(next(iter(e["args"].values())))
    assert set(counters) == {"samples in flight", "queue depth (finished, not yet trained)", "trainer version"}
    assert max(counters["samples in flight"]) <= 16 and min(counters["samples in flight"]) >= 0
    assert counters["trainer version"][-1] == 6
    assert min(counters["queue depth (finished, not yet trained)"]) >= 0


def test_counter_series_merges_equal_times_and_samples_long_series() -> None:
    t, v = counter_series(np.array([0.0, 1.0, 1.0, 2.0]), np.array([1.0, 1.0, -1.0, -1.0]))
    assert t.tolist() == [0.0, 1.0, 2.0] and v.tolist() == [1.0, 1.0, 0.0]
    times = np.arange(10_000, dtype=float)
    t, v = counter_series(times, np.ones(10_000), points=101)
    assert len(t) == 101 and v[0] == 1 and v[-1] == 10_000 and v[50] == 5000


def test_chunked_writing_gives_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = sim_trace()
    export_perfetto(trace, tmp_path / "one.json")
    monkeypatch.setattr(export_module, "CHUNK", 7)
    export_perfetto(trace, tmp_path / "many.json")
    events = [sorted(json.dumps(e, sort_keys=True) for e in load(tmp_path / f)["traceEvents"])
              for f in ("one.json", "many.json")]  # fmt: skip
    assert events[0] == events[1]


def test_odd_identifiers_are_escaped(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.span("trainer.step", 0.0, 2.0, step=1, actor="trainer")
    b.span("rollout", 0.0, 1.0, sample='a"b\\c', group="g\n1", actor="", status="ok", step=1, v_start=0, v_train=0)
    b.span("sandbox.start", 0.0, 0.5, sample="sb-1", actor="sandbox", status="ok")
    out = tmp_path / "odd.json"
    export_perfetto(b.build(TraceMeta(adapter="test")), out)
    events = check_format(load(out))
    rollout = next(e for e in events if e["name"] == "rollout ok")
    assert (rollout["args"]["sample"], rollout["args"]["group"]) == ('a"b\\c', "g\n1")
    assert any(e["name"] == "sandboxes starting" for e in events)


def test_csv_and_parquet_are_the_canonical_trace(tmp_path: Path) -> None:
    trace = sim_trace(steps=3)
    export_table(trace, tmp_path / "t.parquet", "parquet")
    back = read_trace(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(back.events, trace.events)
    export_table(trace, tmp_path / "t.csv", "csv")
    csv = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    assert list(csv.columns) == list(trace.events.columns) and len(csv) == len(trace.events)
    assert np.allclose(csv["t1"].replace("", np.nan).astype(float), trace.events["t1"], equal_nan=True)


def test_cli_writes_each_format_and_rejects_a_missing_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run1"
    run.mkdir()
    sim_trace(steps=3).write(run)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["export", str(run)])
    assert result.exit_code == 0, result.output
    assert load(tmp_path / "run1.perfetto.json")["otherData"]["reconstructed"] is False
    for fmt in ("csv", "parquet"):
        result = runner.invoke(cli, ["export", str(run), "--format", fmt, "-o", str(tmp_path / f"x.{fmt}")])
        assert result.exit_code == 0 and (tmp_path / f"x.{fmt}").stat().st_size > 0
    result = runner.invoke(cli, ["export", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no trace file here" in result.output


def test_many_sandboxes_share_packed_lanes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_module, "MAX_SANDBOX_THREADS", 4)
    b = TraceBuilder()
    b.span("trainer.step", 0.0, 10.0, step=1, actor="trainer")
    for i in range(10):  # two waves of five sandboxes: [0, 2] then [3, 5], each queued, started and run
        t = 0.0 if i < 5 else 3.0
        b.span("sandbox.queue", t, t + 0.5, sample=f"sb-{i}", actor="sandbox")
        b.span("sandbox.start", t + 0.5, t + 1.0, sample=f"sb-{i}", actor="sandbox", status="ok")
        b.span("sandbox.exec", t + 1.0, t + 2.0, sample=f"sb-{i}", actor="sandbox", status="ok")
    out = tmp_path / "sb.json"
    export_perfetto(b.build(TraceMeta(adapter="sandbox")), out)
    events = check_format(load(out))
    lanes = {e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == export_module.SANDBOX_PID}
    assert lanes == {f"sandbox lane/{i}" for i in range(5)}  # a lane per sandbox alive at once, reused by wave two
    by_lane = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e["pid"] == export_module.SANDBOX_PID:
            by_lane[e["tid"]].append(e["args"]["sandbox"])
    assert all(len(set(names)) == 2 for names in by_lane.values())
    starting = [e["args"]["sandboxes"] for e in events if e["name"] == "sandboxes starting"]
    assert max(starting) == 5 and starting[-1] == 0
