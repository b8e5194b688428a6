"""The reference engine's parts that need no process tree: spec validation, rendering, the parser's statuses,
GRPO advantages, the tokenizer and the checker program's graded reward."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchbed.adapter import get_adapter
from benchbed.engine.config import EngineConfig, engine_config
from benchbed.engine.tasks import CALCULATOR, CHECKER, EOS, OBS, build_tokenizer, response_text
from benchbed.engine.trainer import advantages
from benchbed.errors import NotThisFrameworkError, SpecError
from benchbed.spec import build_spec
from benchbed.trace import read_trace


def spec(**ref):
    return build_spec({"name": "t", "adapter": "ref", "workload": {"prompts_per_step": 2, "group_size": 4,
                                                                   "steps": 3}, "ref": ref})  # fmt: skip


def test_invalid_ref_tables_name_the_field():
    with pytest.raises(SpecError, match=r"unknown field 'ref\.modee'"):
        engine_config(spec(modee="sync"))
    with pytest.raises(SpecError, match=r"field 'ref': in_flight_updates and partial_rollouts need mode = 'async'"):
        engine_config(spec(mode="sync", in_flight_updates=True))
    with pytest.raises(SpecError, match=r"ref.concurrency \(2\) must be at least workload.group_size \(4\)"):
        engine_config(spec(concurrency=2))
    with pytest.raises(SpecError, match="top_k"):
        engine_config(spec(model={"experts": 2, "top_k": 3}))


def test_render_writes_the_engine_config_and_caps_threads(tmp_path):
    plan = get_adapter("ref").render(spec(mode="async", staleness_policy="drop", threads=1), tmp_path)
    assert plan.argv[1:] == ["-m", "benchbed.engine", "--config", "engine.json", "--out", "."]
    assert plan.env["OMP_NUM_THREADS"] == "1" and plan.env["HF_HUB_OFFLINE"] == "1"
    cfg = EngineConfig.model_validate_json(plan.files["engine.json"])
    assert (cfg.steps, cfg.batch_size, cfg.concurrency, cfg.mode_label) == (3, 8, 16, "async/drop")


def test_a_spec_without_ref_table_keeps_its_spec_id():
    data = {"name": "q", "adapter": "sim"}
    assert build_spec(data).spec_id == build_spec({**data, "ref": {}}).spec_id
    assert build_spec(data).spec_id != build_spec({**data, "ref": {"mode": "sync"}}).spec_id


def test_parse_refuses_a_directory_without_an_engine_log(tmp_path):
    with pytest.raises(NotThisFrameworkError, match="no events"):
        get_adapter("ref").parse(tmp_path)


def _log(tmp_path, events):
    (tmp_path / "events").mkdir()
    lines = [json.dumps(e) for e in events]
    (tmp_path / "events" / "orchestrator.jsonl").write_text("\n".join(lines) + "\n")


def test_parser_gives_each_sample_its_final_status_and_versions(tmp_path):
    t = 1000.0
    config = {"group_size": 2, "ref": {"model": {"arch": "qwen3_moe"}, "generators": 1, "device": "cpu", "seed": 0}}

    def rollout(sid, gid, status, reward, spans):
        return {"ev": "rollout", "t": t + 3, "sample": sid, "group": gid, "t0": t + 1, "t1": t + 2, "status": status,
                "reward": reward, "spans": spans, "v_start": spans[0][0] if spans else -1,
                "v_end": spans[-1][0] if spans else -1, "env_version": 0, "resumes": 0, "straggler": False,
                "tokens": 3, "error": ""}  # fmt: skip

    events = [
        {"ev": "run_start", "t": t, "config": config, "mode": "async/drop", "concurrency": 4, "batch_size": 2},
        rollout("a-0", "a", "done", 1.0, [[0, 2], [1, 1]]), rollout("a-1", "a", "done", 0.0, [[0, 3]]),
        rollout("b-0", "b", "done", 0.5, [[0, 3]]), rollout("b-1", "b", "done", 0.5, [[0, 3]]),
        rollout("c-0", "c", "done", 0.25, [[0, 3]]), rollout("c-1", "c", "failed", None, []),
        rollout("d-0", "d", "done", 1.0, [[1, 3]]), rollout("d-1", "d", "done", 0.0, [[1, 3]]),
        {"ev": "group", "t": t + 3, "group": "a", "status": "accepted", "reward_std": 0.5, "v_start": 0, "step": 1},
        {"ev": "group", "t": t + 3, "group": "b", "status": "filtered_zero_adv", "reward_std": 0.0, "v_start": 0,
         "step": 1},
        {"ev": "group", "t": t + 3, "group": "c", "status": "discarded", "reward_std": None, "v_start": 0, "step": 1},
        {"ev": "group", "t": t + 3, "group": "d", "status": "accepted", "reward_std": 0.5, "v_start": 1, "step": 2},
        {"ev": "batch", "t": t + 4, "step": 2, "v_train": 1, "groups": ["a"], "samples": ["a-0", "a-1"],
         "staleness": [1, 1]},
        {"ev": "step", "t": t + 6, "step": 2, "v_train": 1, "t0": t + 2, "t_wait_end": t + 4, "t_compute_end": t + 5,
         "t1": t + 6, "wait_s": 2.0, "compute_s": 1.0, "sync_s": 1.0, "step_s": 4.0, "loss": 0.1},
        {"ev": "run_end", "t": t + 7, "status": "succeeded"},
    ]  # fmt: skip
    _log(tmp_path, events)
    trace = get_adapter("ref").parse(tmp_path)
    r = trace.of("rollout").set_index("sample")
    assert dict(r["status"]) == {"a-0": "ok", "a-1": "ok", "b-0": "filtered_zero_adv", "b-1": "filtered_zero_adv",
                                 "c-0": "discarded", "c-1": "failed", "d-0": "ok", "d-1": "ok"}  # fmt: skip
    assert (r.loc["a-0", ["v_start", "v_end", "v_train", "step"]] == [0, 1, 1, 2]).all()
    assert r.loc["d-0", "v_train"] == -1  # accepted, never consumed
    assert json.loads(r.loc["a-0", "attrs"])["versions"] == [[0, 2], [1, 1]]
    step = trace.of("trainer.step").iloc[0]
    wait = trace.of("trainer.wait").iloc[0]
    assert (step["t0"], step["t1"], wait["t0"], wait["t1"]) == (2.0, 6.0, 2.0, 4.0)
    groups = trace.of("rollout.group").set_index("group")
    assert set(groups.index) == {"a", "b", "d"} and groups.loc["b", "status"] == "filtered_zero_adv"
    assert not trace.meta.partial and trace.meta.mode == "async/drop"
    trace.write(tmp_path)
    assert len(read_trace(tmp_path).events) == len(trace.events)


def test_parser_marks_a_log_without_run_end_partial(tmp_path):
    config = {"group_size": 2, "ref": {"model": {}, "generators": 1, "device": "cpu", "seed": 0}}
    _log(tmp_path, [{"ev": "run_start", "t": 1.0, "config": config, "mode": "sync", "concurrency": 2,
                     "batch_size": 2}])  # fmt: skip
    trace = get_adapter("ref").parse(tmp_path)
    assert trace.meta.partial and "no run_end" in trace.meta.warnings[0]


def test_advantages_are_normalised_within_each_group():
    adv = advantages([1.0, 0.0, 0.5, 0.5, 0.25, 0.75], ["a", "a", "b", "b", "c", "c"])
    assert adv[0] == pytest.approx(1.0, abs=1e-5) and adv[1] == pytest.approx(-1.0, abs=1e-5)
    assert adv[2:4] == [0.0, 0.0]  # rewards agree: no signal
    assert adv[4] == pytest.approx(-1.0, abs=1e-5) and adv[5] == pytest.approx(1.0, abs=1e-5)


def test_tokenizer_is_character_level_with_special_tokens():
    tok = build_tokenizer()
    ids = tok.encode(f"12+7={OBS}19=").ids
    assert len(ids) == 9 and tok.token_to_id(OBS) in ids
    assert response_text(tok, tok.encode(f"19{EOS}4").ids) == "19"


@pytest.mark.parametrize(("response", "expected", "reward"), [
    ("19", "19", 1.0), ("19=", "19", 1.0), ("-3", "-3", 1.0), ("12", "19", 0.5), ("7", "19", 0.25), ("", "19", 0.0),
    ("=1", "19", 0.0), ("-", "-3", 0.0), ("-5", "-3", 0.25), ("190", "19", 0.5), ("-35", "-3", 0.5),
])  # fmt: skip
def test_checker_grades_format_first_digit_and_exact_answer(response, expected, reward):
    out = subprocess.run(["/bin/sh", "-c", CHECKER, "sh", response, expected, "0"], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert json.loads(out.stdout)["reward"] == reward


def test_calculator_tool_evaluates_the_expression():
    for expression, value in (("12+7", "19"), ("3-40", "-37")):
        out = subprocess.run(["/bin/sh", "-c", CALCULATOR, "sh", expression], capture_output=True, text=True,
                             check=True)  # fmt: skip
        assert out.stdout.strip() == value
