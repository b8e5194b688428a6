"""traces.jsonl episodes: rollout rows with versions, groups and zero advantage, sandbox starts and failures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from benchbed.adapters.prime_rl import PrimeRLAdapter
from benchbed.adapters.prime_rl import episodes as episodes_module
from benchbed.adapters.prime_rl.episodes import episode_careful, episode_direct, episode_from_record, load_record, slim

from benchbed import keys as K
from benchbed.metrics import compute_metrics


def records(run: Path, subset: str = "all") -> list[dict]:
    out = []
    for path in sorted(run.glob(f"rollouts/step_*/train/{subset}/traces.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines()]
    return out


@pytest.fixture(scope="module")
def head(fixtures: Path):
    return PrimeRLAdapter().parse(fixtures / "head-559b447")


@pytest.fixture(scope="module")
def failures(fixtures: Path):
    return PrimeRLAdapter().parse(fixtures / "head-559b447-sandbox-failures")


def test_one_rollout_per_episode_with_policy_versions(head, fixtures: Path) -> None:
    recs = {r["id"]: r for r in records(fixtures / "head-559b447")}
    rollouts = head.of(K.ROLLOUT).set_index("sample")
    assert set(rollouts.index) == set(recs)
    for episode_id, rec in recs.items():
        row = rollouts.loc[episode_id]
        assert row["v_start"] == rec["run"]["work"]["policy"]["start"]
        assert row["v_end"] == rec["run"]["work"]["policy"]["end"]
        assert row["group"] == rec["group"]["id"]
        assert row["kind"] == "span"
        timing = rec["traces"][0]["timing"]
        assert row["t1"] - row["t0"] == pytest.approx(timing["scoring"]["end"] - timing["start"], abs=1e-6)


def test_v_train_comes_from_the_effective_file_of_the_step(head, fixtures: Path) -> None:
    trained = {}
    for path in (fixtures / "head-559b447").glob("rollouts/step_*/train/effective/traces.jsonl"):
        step = int(path.parts[-4].removeprefix("step_"))
        trained |= {json.loads(line)["id"]: step for line in path.read_text().splitlines()}
    rollouts = head.of(K.ROLLOUT).set_index("sample")
    ok = rollouts[rollouts["status"] == "ok"]
    assert set(ok.index) == set(trained)
    for episode_id, step in trained.items():
        assert (ok.loc[episode_id, "step"], ok.loc[episode_id, "v_train"]) == (step, step - 1)
    assert (rollouts.loc[rollouts["status"] != "ok", "v_train"] == -1).all()


def test_statuses_of_untrained_episodes(head, fixtures: Path) -> None:
    rollouts = head.of(K.ROLLOUT)
    by_status = rollouts.groupby("status", observed=True)["group"].agg(lambda g: sorted(set(g)))
    assert by_status["dropped_stale"] == ["s5-509"]  # v_start 1 trained at step 5: 4 - 1 = 3 > max_off_policy_steps 2
    assert by_status["filtered_zero_adv"] == ["z2-207", "z4-407"]
    failed = rollouts[rollouts["status"] == "failed"]
    assert len(failed) == 1
    assert json.loads(failed["attrs"].iloc[0])["error"] == "SandboxError"
    assert "prime exec failed" in json.loads(failed["attrs"].iloc[0])["message"]
    stale = rollouts[rollouts["status"] == "dropped_stale"]
    assert (stale["step"] == 5).all() and (stale["v_start"] == 1).all()


def test_rewards_and_groups(head, fixtures: Path) -> None:
    recs = records(fixtures / "head-559b447")
    groups = head.of(K.ROLLOUT_GROUP).set_index("group")
    assert set(groups.index) == {r["group"]["id"] for r in recs}
    for gid in groups.index:
        clean = [r["traces"][0]["rewards"]["passed"]["score"] for r in recs if r["group"]["id"] == gid and r["ok"]]
        assert groups.loc[gid, "value"] == pytest.approx(float(np.std(clean)))
        assert groups.loc[gid, "status"] == ("filtered_zero_adv" if np.std(clean) == 0 else "ok")
    rollouts = head.of(K.ROLLOUT).set_index("sample")
    first = recs[0]
    assert rollouts.loc[first["id"], "value"] == first["traces"][0]["rewards"]["passed"]["score"]


def test_counters_per_window(head, fixtures: Path) -> None:
    finished = head.of(K.SAMPLES_FINISHED)
    finished = dict(zip(finished["step"], finished["value"], strict=True))
    for step in range(1, 7):
        path = fixtures / "head-559b447" / "rollouts" / f"step_{step}" / "train"
        assert finished[step] == len((path / "all" / "traces.jsonl").read_text().splitlines())
        trained = head.of(K.SAMPLES_TRAINED)
        assert trained[trained["step"] == step]["value"].iloc[0] == len(
            (path / "effective" / "traces.jsonl").read_text().splitlines()
        )
    zero = head.of(K.GROUPS_ZERO_ADV)
    assert dict(zip(zero["step"], zero["value"], strict=True)) == {1: 0, 2: 1, 3: 0, 4: 1, 5: 0, 6: 0}


def test_metrics_from_episodes(head) -> None:
    m = compute_metrics(head)
    # Window = steps 2..6: finished = 12 + 7 + 12 + 12 + 8 (the exec failure is not a finished sample).
    assert m["dropped_stale_fraction"].value == pytest.approx(4 / 51)
    assert m["wasted_generation_fraction"].value == pytest.approx(12 / 51)
    assert m["zero_adv_group_fraction"].value == pytest.approx(2 / 13)
    rollouts = head.of(K.ROLLOUT)
    trained = rollouts[(rollouts["status"] == "ok") & (rollouts["step"] > 1)]
    assert m["staleness_mean"].value == pytest.approx((trained["v_train"] - trained["v_start"]).mean())
    assert m["staleness_mean"].value == pytest.approx(m["framework_staleness_mean"].value, abs=0.05)


def test_boot_timing_becomes_sandbox_start(head, fixtures: Path) -> None:
    starts = head.of(K.SANDBOX_START).set_index("sample")
    recs = records(fixtures / "head-559b447")
    assert len(starts) == len(recs)
    for rec in recs:
        boot = rec["traces"][0]["timing"]["boot"]
        row = starts.loc[rec["id"]]
        assert row["t1"] - row["t0"] == pytest.approx(boot["end"] - boot["start"], abs=1e-6)
        assert row["status"] == "ok"
        assert json.loads(row["attrs"]) == {"runtime": "prime", "image_cached": True}


def test_provisioning_failures_get_their_reason(failures, gen, fixtures: Path) -> None:
    starts = failures.of(K.SANDBOX_START)
    failed = starts[starts["status"] != "ok"]
    recs = {r["id"]: r for r in records(fixtures / "head-559b447-sandbox-failures")}
    assert len(failed) == len(gen.BOOT_FAILURES) == 6
    for (group, _), (message, reason) in gen.BOOT_FAILURES.items():
        rec_ids = [i for i, r in recs.items() if r["group"]["id"] == group and r["errors"]]
        assert len(rec_ids) == 1
        row = failed[failed["sample"] == rec_ids[0]].iloc[0]
        assert row["status"] == reason
        attrs = json.loads(row["attrs"])
        assert attrs["message"] == f"prime sandbox provisioning failed: {message}"
        assert row["t1"] >= row["t0"]
    m = compute_metrics(failures, warmup_steps=0)
    assert m["sandbox_init_failure_rate"].value == pytest.approx(6 / 24)
    rollouts = failures.of(K.ROLLOUT)
    assert set(rollouts[rollouts["sample"].isin(failed["sample"])]["status"]) == {"failed"}


def test_failed_boot_durations_end_at_the_last_recorded_phase(failures, fixtures: Path) -> None:
    recs = {r["id"]: r for r in records(fixtures / "head-559b447-sandbox-failures")}
    starts = failures.of(K.SANDBOX_START).set_index("sample")
    for episode_id, rec in recs.items():
        timing = rec["traces"][0]["timing"]
        if timing["boot"]["end"] == 0:
            row = starts.loc[episode_id]
            assert row["t1"] - row["t0"] == pytest.approx(timing["finalize"]["end"] - timing["boot"]["start"])


def test_crashed_run_aborts_unfinished_batches(fixtures: Path) -> None:
    trace = PrimeRLAdapter().parse(fixtures / "head-559b447-crashed")
    rollouts = trace.of(K.ROLLOUT)
    aborted = rollouts[rollouts["status"] == "aborted"]
    # Batch 4 was shipped but the trainer died in step 4; window 5 was still being collected.
    assert sorted(set(aborted["step"])) == [4, 5]
    assert (aborted["v_train"] == -1).all()
    assert set(rollouts[rollouts["step"] <= 3]["status"]) == {"ok"}
    assert trace.meta.partial
    assert any("reference step(s) [5] that no metrics row has (kept)" in w for w in trace.meta.warnings)


def test_episodes_referencing_unknown_steps_are_kept(run_copy) -> None:
    run = run_copy("head-559b447")
    (run / "rollouts" / "step_6").rename(run / "rollouts" / "step_60")
    trace = PrimeRLAdapter().parse(run)
    rollouts = trace.of(K.ROLLOUT)
    assert len(rollouts) == 60
    n_moved = len((run / "rollouts" / "step_60" / "train" / "all" / "traces.jsonl").read_text().splitlines())
    assert any(
        f"{n_moved} episode(s) reference step(s) [60] that no metrics row has (kept)" in w for w in trace.meta.warnings
    )


def test_truncated_traces_line_is_skipped(run_copy) -> None:
    run = run_copy("head-559b447")
    path = run / "rollouts" / "step_2" / "train" / "all" / "traces.jsonl"
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:300])
    trace = PrimeRLAdapter().parse(run)
    n = len(text.splitlines()) + 1
    assert any(f"step_2/train/all/traces.jsonl:{n}: skipped truncated last line" in w for w in trace.meta.warnings)
    assert len(trace.of(K.ROLLOUT)) == 60


def test_slim_cut_keeps_every_field_benchbed_reads(fixtures: Path) -> None:
    for path in (fixtures / "head-559b447-sandbox-failures").glob("rollouts/step_*/train/all/traces.jsonl"):
        for raw in path.read_bytes().splitlines():
            full, cut = json.loads(raw), json.loads(slim(raw))
            assert len(slim(raw)) < len(raw)
            for trace in full["traces"]:
                del trace["nodes"], trace["task"], trace["agent"]["config"]  # calls stay: their usage has the tokens
            del full["task"]
            assert cut == full


def test_slim_cut_falls_back_when_a_marker_is_nested(tmp_path: Path) -> None:
    record = {
        "id": "e1",
        "env": {"id": "x"},
        "task": {"type": "Task", "data": {"info": {"group": {"id": "decoy"}}}},
        "group": {"id": "g"},
        "run": {"type": "train", "id": "r", "work": {"type": "train", "step": 1}},
        "ok": True,
        "errors": [],
        "traces": [],
    }
    raw = json.dumps(record, separators=(",", ":")).encode()
    assert episode_from_record(load_record(raw), 1, "x", []).group == "g"


def test_standard_library_json_gives_the_same_trace(fixtures: Path, monkeypatch: pytest.MonkeyPatch, head) -> None:
    monkeypatch.setattr(episodes_module, "_loads", json.loads)
    plain = PrimeRLAdapter().parse(fixtures / "head-559b447")
    pd.testing.assert_frame_equal(plain.events, head.events)


def test_direct_and_careful_readers_agree(fixtures: Path) -> None:
    for name in ("head-559b447", "head-559b447-sandbox-failures"):
        for rec in records(fixtures / name):
            direct = episode_direct(rec, 3, "x")
            assert direct is not None
            assert direct == episode_careful(rec, 3, "x", [])


def test_irregular_records_are_read_with_defaults() -> None:
    record = {"id": "e1", "env": {"id": "math"}, "ok": False, "traces": [{"timing": {"start": 5.0}}]}
    warnings: list[str] = []
    episode = episode_from_record(record, 2, "f:1", warnings)
    assert episode is not None and warnings == []
    assert (episode.group, episode.v_start, episode.v_end, episode.env) == ("", -1, -1, "math")
    assert (episode.t0, episode.t1) == (5.0, 5.0) and math.isnan(episode.reward)
    assert episode_from_record({"env": {}}, 2, "f:2", warnings) is None
    assert warnings == ["f:2: skipped record without an episode id"]


def test_non_finite_reward_is_dropped_with_a_warning(fixtures: Path) -> None:
    rec = records(fixtures / "head-559b447")[0]
    rec["traces"][0]["rewards"] = {"passed": {"score": float("inf"), "weight": 1.0}}
    warnings: list[str] = []
    episode = episode_from_record(rec, 1, "f:7", warnings)
    assert math.isnan(episode.reward)
    assert warnings == ["f:7: non-finite reward; kept the episode without a reward"]
