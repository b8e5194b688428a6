"""`benchbed nightly`, `history` and `compare` run as a user would, night after night on one store."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.errors import SpecError
from benchbed.nightly.stats import compare_records
from benchbed.nightly.suite import load_suite
from benchbed.pipeline import render
from benchbed.spec import load_spec, repeated
from benchbed.store import read_record, write_record

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "experiments" / "quickstart.toml"
# A cut-down nightly-cpu: one simulated entry, 3 repeats of a short run; 128 slots keep the trainer's idle
# time moderate (about 0.3), so a 10% slower generator moves both throughput and idle well past 5%.
SUITE = """
name = "cpu-mini"
[gate]
nights = 5
[[entry]]
name = "async"
spec = "quickstart.toml"
repeats = 3
set = ["workload.steps=30", "sim.concurrency=128"]
watch = ["trainer_throughput_sps", "trainer_idle_ratio"]
"""
SLOWER = ("--set", "sim.latency.mean=66.0")  # the generator's rollouts take 10% longer


def invoke(*args: object):
    """The command in this process (what it launches still runs as subprocesses), to keep the tests short."""
    return CliRunner().invoke(cli, [str(a) for a in args], env={"BENCHBED_MACHINE": "ci-box"})


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Four nights on one store: two to build history, one unchanged, one with a 10% slower generator."""
    root = tmp_path_factory.mktemp("nightly")
    (root / "quickstart.toml").write_text(QUICKSTART.read_text())
    (root / "suite.toml").write_text(SUITE)
    store = root / "store"
    results = []
    for n, extra in enumerate([(), (), (), SLOWER]):
        junit = root / f"night{n}.xml"
        result = invoke("nightly", root / "suite.toml", "--store", store, "--json", "--fail-on", "regression",
                        "--junit", junit, *extra)  # fmt: skip
        assert result.exit_code in (0, 3), (result.stderr, result.exception)
        results.append((result, json.loads(result.stdout), junit))
    return store, results


def verdicts_of(doc: dict) -> dict[str, dict]:
    return {v["metric"]: v for v in doc["verdicts"]}


def test_first_nights_have_insufficient_data_and_pass(nights):
    _, results = nights
    for result, doc, _ in results[:2]:
        assert result.exit_code == 0
        assert {v["verdict"] for v in doc["verdicts"]} == {"insufficient_data"}
        assert len(doc["runs"]) == 3 and [r["repeat"] for r in doc["runs"]] == [0, 1, 2]
    assert verdicts_of(results[1][1])["trainer_idle_ratio"]["n_baseline"] == 3


def test_repeats_use_their_own_seeds_and_share_the_spec_id(nights):
    _, results = nights
    runs = results[0][1]["runs"]
    assert len({r["spec_id"] for r in runs}) == 1
    assert len({r["metrics"]["trainer_throughput_sps"]["value"] for r in runs}) == 3
    assert all(r["suite"]["name"] == "cpu-mini" and r["suite"]["entry"] == "async" for r in runs)
    assert runs[0]["suite"]["gate"] == {"nights": 5, "alpha": 0.05, "min_effect": 0.05, "band": {}, "band_sd": 2.0}
    assert len({r["suite"]["night"] for r in runs}) == 1 and runs[0]["machine"]["name"] == "ci-box"


def test_an_unchanged_night_does_not_fail(nights):
    _, results = nights
    result, doc, junit = results[2]
    assert result.exit_code == 0
    verdicts = verdicts_of(doc)
    assert {v["verdict"] for v in verdicts.values()} == {"unchanged"}
    throughput = verdicts["trainer_throughput_sps"]
    assert (throughput["n_baseline"], throughput["n_candidate"], throughput["p_value"]) == (6, 3, 1.0)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("tests") == "2"


def test_a_ten_percent_slower_generator_exits_3_and_fails_in_junit(nights):
    _, results = nights
    result, doc, junit = results[3]
    assert result.exit_code == 3
    verdicts = verdicts_of(doc)
    keys = {"entry", "metric", "verdict", "baseline_median", "candidate_median", "relative_change", "p_value",
            "n_baseline", "n_candidate"}  # fmt: skip
    assert keys <= set(verdicts["trainer_idle_ratio"])
    throughput, idle = verdicts["trainer_throughput_sps"], verdicts["trainer_idle_ratio"]
    assert throughput["verdict"] == "regression" and throughput["relative_change"] < -0.05
    assert idle["verdict"] == "regression" and idle["relative_change"] > 0.05
    assert throughput["n_baseline"] == 9 and throughput["p_value"] < 0.05
    assert any(c.startswith("spec ") for c in throughput["changes"])  # the edited spec is marked, not a new series
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["trainer_idle_ratio"].find("failure") is not None
    assert "regression" in cases["trainer_throughput_sps"].find("failure").get("message")
    assert "**regression**" not in result.stdout  # --json: stdout is the JSON document only


def test_history_shows_the_series_with_its_marked_change(nights, tmp_path):
    store, results = nights
    page = tmp_path / "history.html"
    result = invoke("history", "--store", store, "--entry", "async", "--metric", "trainer_throughput_sps",
                    "--json", "-o", page)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    (series,) = json.loads(result.stdout)["series"]
    assert series["machine"] == "ci-box" and len(series["nights"]) == 4
    assert [len(n["values"]) for n in series["nights"]] == [3, 3, 3, 3]
    assert series["marked_changes"][0]["night"] == series["nights"][3]["night"]
    assert series["last_verdict"]["verdict"] == "regression"
    html = page.read_text()
    assert 'data-verdict="regression"' in html and html.count("<svg") == 1


def test_history_table_is_aligned_text_with_the_series_cells(nights):
    store, _ = nights
    result = invoke("history", "--store", store, "--entry", "async", "--metric", "trainer_throughput_sps")
    assert result.exit_code == 0, result.stderr
    (series,) = json.loads(invoke("history", "--store", store, "--entry", "async", "--metric",
                                  "trainer_throughput_sps", "--json").stdout)["series"]  # fmt: skip
    title, header, row = result.stdout.splitlines()
    assert title == f"series in {store}"
    assert header.split("  ")[0] == "machine" and row.startswith("ci-box  ")
    assert header.index("last verdict") == row.index("regression")  # the columns line up under their headers
    assert f"{series['nights'][-1]['median']:.4g}" in row.split()
    assert f"{series['marked_changes'][0]['night'][:15]}: " in row


def test_nightly_page_summary_and_verdicts_are_kept_per_night(nights):
    store, results = nights
    nights_dirs = sorted((store / "_nightly" / "ci-box" / "cpu-mini").iterdir())
    assert len(nights_dirs) == 4
    last = nights_dirs[-1]
    assert "2 regressions" in (last / "summary.md").read_text()
    assert [v["verdict"] for v in json.loads((last / "verdicts.json").read_text())] == ["regression"] * 2
    assert 'data-metric="trainer_idle_ratio"' in (last / "nightly.html").read_text()


def test_compare_run_dirs_gives_the_same_verdict(nights):
    store, results = nights
    before = [d for _, doc, _ in results[:3] for d in _run_dirs(store, doc)]
    after = _run_dirs(store, results[3][1])
    result = invoke("compare", *before, "--vs", *after, "--metric", "trainer_throughput_sps", "--json",
                    "--fail-on", "regression")  # fmt: skip
    assert result.exit_code == 3, result.stderr
    doc = json.loads(result.stdout)
    (verdict,) = doc["verdicts"]
    nightly = verdicts_of(results[3][1])["trainer_throughput_sps"]
    assert verdict["verdict"] == "regression" and len(doc["runs"]) == 12
    assert (verdict["n_baseline"], verdict["n_candidate"]) == (9, 3)
    assert verdict["p_value"] == pytest.approx(nightly["p_value"])
    few = compare_records([read_record(d) for d in before[-3:]], [read_record(d) for d in after],
                          ["trainer_throughput_sps"])  # fmt: skip
    assert [v.verdict for v in few] == ["insufficient_data"]  # 3 against 3 cannot reach p < 0.05


def _run_dirs(store: Path, doc: dict) -> list[str]:
    ids = {r["run_id"] for r in doc["runs"]}
    return [str(p.parent) for p in store.glob("*/*/*/*/record.json") if read_record(p.parent).run_id in ids]


def test_bad_suites_exit_2_and_store_nothing(benchbed, tmp_path):
    (tmp_path / "quickstart.toml").write_text(QUICKSTART.read_text())
    cases = {
        "bad-metric.toml": (SUITE.replace('"trainer_idle_ratio"]', '"rate_gap"]'), "no better direction"),
        "missing-spec.toml": (SUITE.replace("quickstart.toml", "nope.toml"), "nope.toml"),
        "unknown-field.toml": ("colour = 1\n" + SUITE, "unknown field 'colour'"),
        "same-name.toml": (SUITE + SUITE[SUITE.index("[[entry]]") :], "repeated: async"),
        "bad-override.toml": (SUITE.replace("workload.steps=30", "workload.stepz=30"), "workload.stepz"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(SpecError, match=message):
            load_suite(tmp_path / name)
    result = benchbed(
        "nightly", tmp_path / "bad-metric.toml", "--store", tmp_path / "store", env={"BENCHBED_MACHINE": "ci-box"}
    )
    assert result.returncode == 2 and "no better direction" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()


def test_example_suites_load_with_every_spec():
    suite, planned = load_suite(REPO / "experiments" / "nightly-cpu.toml")
    names = ["quickstart-async", "quickstart-sync", "sandbox-local", "ref-async", "trl-grpo",
             "ref-learn[ref.mode=sync]", "ref-learn[ref.mode=async]", "verl-grpo", "trl-vllm"]  # fmt: skip
    assert [e.name for e in planned] == names
    assert planned[5].spec.quality.target == "quality.reward_mean>=0.28 over 5" and planned[5].spec.repeats == 1
    assert set(planned[6].gate.band) == {"final_reward_mean", "target_reached", "time_to_target_s",
                                         "trainer_throughput_sps"}  # fmt: skip
    assert planned[3].spec.adapter == "ref" and planned[3].spec.workload.steps == 10
    assert planned[4].spec.adapter == "trl" and planned[4].spec.repeats == 3
    assert planned[0].spec.repeats == 5 and planned[0].spec.workload.steps == 100
    assert planned[7].spec.adapter == "verl" and planned[7].spec.repeats == 3 and planned[7].gate.min_effect == 0.5
    cluster, entries = load_suite(REPO / "experiments" / "nightly-cluster.toml")
    names = [e.name for e in entries]
    assert "verl-sandbox-scaling[verl.concurrency=960]" in names and len(names) == 7
    assert all(e.spec.repeats == 2 for e in entries)


def test_the_cpu_suites_verl_entry_plans_real_verl_in_the_projects_environment(tmp_path, monkeypatch):
    """The nightly-cpu suite's verl entry, planned as a night would launch it (without launching it: a real run is
    tests/launch/test_verl_cpu.py's): verl's own trainer, on the CPU, in the python `make verl-cpu` builds."""
    monkeypatch.chdir(REPO)  # the spec's python is a path taken from where benchbed runs
    _, planned = load_suite(REPO / "experiments" / "nightly-cpu.toml")
    (entry,) = [e for e in planned if e.name == "verl-grpo"]
    _, plan = render(entry.spec, tmp_path / "run")
    python, launcher, module, *overrides = plan.argv
    assert Path(python) == REPO / ".envs" / "verl-cpu" / "bin" / "python"
    assert (launcher, module) == (str(tmp_path / "run" / "verl_cpu" / "launch.py"), "verl.trainer.main_ppo")
    assert {"trainer.device=cpu", "trainer.v1.trainer_mode=sync", "trainer.total_training_steps=3",
            "data.train_batch_size=2", "actor_rollout_ref.rollout.n=4"} <= set(overrides)  # fmt: skip
    assert plan.env["VERL_PLATFORM"] == "cpu" and "verl_cpu/benchbed_verl_cpu.py" in plan.files


def test_the_cpu_suites_trl_vllm_entry_plans_real_trl_with_vllm_in_the_projects_environment(tmp_path, monkeypatch):
    """The nightly-cpu suite's TRL-with-vLLM entry, planned as a night would launch it (a real run is
    tests/launch/test_trl_vllm_cpu.py's): TRL's GRPOTrainer with vLLM colocated, on the CPU through benchbed's CPU
    route, in the python `make trl-vllm` builds."""
    monkeypatch.chdir(REPO)  # the spec's python is a path taken from where benchbed runs
    _, planned = load_suite(REPO / "experiments" / "nightly-cpu.toml")
    (entry,) = [e for e in planned if e.name == "trl-vllm"]
    assert entry.spec.repeats == 3 and entry.gate.min_effect == 0.5
    _, plan = render(entry.spec, tmp_path / "run")
    assert plan.argv == [str(REPO / ".envs" / "trl-vllm" / "bin" / "python"), "trl_grpo.py"]
    script = plan.files["trl_grpo.py"]
    assert "vllm_cpu.install_grpo()" in script and "vllm_mode='colocate'," in script and "max_steps=3," in script
    assert plan.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and plan.env["VLLM_SERVER_DEV_MODE"] == "1"


def test_an_entry_gate_changes_only_its_own_fields(tmp_path):
    (tmp_path / "quickstart.toml").write_text(QUICKSTART.read_text())
    (tmp_path / "s.toml").write_text(SUITE.replace("[[entry]]", "[[entry]]\ngate = { min_effect = 0.5 }"))
    (entry,) = load_suite(tmp_path / "s.toml")[1]
    assert (entry.gate.nights, entry.gate.alpha, entry.gate.min_effect) == (5, 0.05, 0.5)
    (tmp_path / "bad.toml").write_text(SUITE.replace("[[entry]]", "[[entry]]\ngate = { nigths = 3 }"))
    with pytest.raises(SpecError, match="unknown field 'nigths'"):
        load_suite(tmp_path / "bad.toml")


def test_run_honours_repeats_with_one_seed_per_repeat(tmp_path):
    result = invoke("run", QUICKSTART, "--set", "repeats=2", "--set", "workload.steps=10", "--store", tmp_path,
                    "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    records = json.loads(result.stdout)
    assert [r["repeat"] for r in records] == [0, 1] and len({r["spec_id"] for r in records}) == 1
    run_dirs = sorted(tmp_path.glob("*/sim/*/*"), key=lambda d: read_record(d).repeat)
    seeds = [json.loads((d / "sim-spec.json").read_text())["sim"]["seed"] for d in run_dirs]
    assert seeds == [0, 1] and records[0]["metrics"] != records[1]["metrics"]


def test_repeated_keeps_the_spec_id_and_counts_up():
    spec = load_spec(QUICKSTART, ["repeats=3"])
    copies = list(repeated(spec))
    assert [c.repeat for c in copies] == [0, 1, 2] and {c.spec_id for c in copies} == {spec.spec_id}


def test_history_of_a_store_that_does_not_exist_is_an_error(tmp_path):
    from click.testing import CliRunner

    from benchbed.cli.main import cli

    result = CliRunner().invoke(cli, ["history", "--store", str(tmp_path / "typo"), "--json"])
    assert result.exit_code == 2 and "no such store" in result.output


TRAINER_BOUND = """
name = "steps"
[[entry]]
name = "trainer-bound"
spec = "quickstart.toml"
repeats = 1
set = ["workload.steps=8", "sim.concurrency=512", "sim.train_step_time=120.0"]
watch = ["trainer_throughput_sps"]
"""


def test_six_equal_nights_then_a_slower_trainer_places_the_change_point_on_the_changed_night(tmp_path):
    """Issue 25's sequence: six identical simulated nights (a trainer-bound run, 64 samples per 120 s step, about
    0.53 samples/s), then a trainer 13% slower. After the changed night there is no change point anywhere (it
    is that night's verdict); after a second night at the new level, exactly the changed night (the 7th) on the
    page, in the Markdown summary and in `history --json` alike."""
    (tmp_path / "quickstart.toml").write_text(QUICKSTART.read_text())
    (tmp_path / "suite.toml").write_text(TRAINER_BOUND)
    store = tmp_path / "store"
    seen = []
    for n in range(8):
        slower = ("--set", "sim.train_step_time=136.0") if n >= 6 else ()
        result = invoke("nightly", tmp_path / "suite.toml", "--store", store, *slower)
        assert result.exit_code == 0, (result.stderr, result.exception)
        history = invoke("history", "--store", store, "--json")
        (series,) = json.loads(history.stdout)["series"]
        night_dir = sorted((store / "_nightly" / "ci-box" / "steps").iterdir())[-1]
        page = (night_dir / "nightly.html").read_text()
        seen.append((series, result.stdout, page))
    medians = [n["median"] for n in seen[-1][0]["nights"]]
    assert len(set(medians[:6])) == 1 and len(set(medians[6:])) == 1 and medians[6] < 0.9 * medians[0]
    nights = [n["night"] for n in seen[-1][0]["nights"]]
    for series, summary, page in seen[:7]:
        assert series["change_points"] == [] and "Change points" not in summary
        assert 'data-change-points=""' in page
    changed = seen[6][0]["last_verdict"]  # the changed night shows as last night's verdict (one repeat: too few)
    assert changed["verdict"] == "insufficient_data" and changed["relative_change"] < -0.1
    series, summary, page = seen[7]
    assert series["change_points"] == [nights[6]]
    assert series["levels"] == [{"from_night": nights[6], "median_before": medians[0], "median_after": medians[6]}]
    assert f"- trainer-bound trainer_throughput_sps: night {nights[6]}, {medians[0]:.4g} → {medians[6]:.4g}" in summary
    assert f'data-change-points="{nights[6]}"' in page and f"new level from night {nights[6]}" in page


def test_the_tie_case_is_unchanged_at_p_0_0606_in_compare_and_in_the_nightly_gate(nights, tmp_path):
    """Issue 26: seven runs with staleness_max [1,1,1,1,1,2,2] against four at [2,2,2,2]. The exact permutation
    p-value with average ranks is 20/330 = 0.0606 (scipy's default, the normal approximation, said 0.038)."""
    store, results = nights
    template = read_record(_run_dirs(store, results[0][1])[0])
    tie_store = tmp_path / "store"
    dirs = []
    for i, value in enumerate([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]):
        night = ("20260101T020000Z-a", "20260102T020000Z-b", "20260103T020000Z-c")[min(i // 4, 2) if i < 7 else 2]
        metric = template.metrics["trainer_idle_ratio"].model_copy(update={"value": float(value), "unit": "versions"})
        suite = template.suite.model_copy(update={"night": night, "watch": ["staleness_max"]})
        started = f"2026-01-0{1 + i // 4}T02:00:{i:02d}Z"
        update = {"run_id": f"tie{i:02d}", "metrics": {"staleness_max": metric}, "suite": suite, "started_at": started}
        record = template.model_copy(update=update)
        dirs.append(tmp_path / "store" / "m" / "sim" / "s" / f"run{i:02d}")
        write_record(dirs[-1], record)
    result = invoke("compare", *dirs[:7], "--vs", *dirs[7:], "--metric", "staleness_max", "--json")
    assert result.exit_code == 0, result.stderr
    (verdict,) = json.loads(result.stdout)["verdicts"]
    assert verdict["verdict"] == "unchanged" and verdict["p_value"] == pytest.approx(20 / 330, abs=1e-15)
    history = invoke("history", "--store", tie_store, "--json")
    (series,) = json.loads(history.stdout)["series"]
    assert [len(n["values"]) for n in series["nights"]] == [4, 3, 4]
    gate = series["last_verdict"]  # the nightly gate: the last night against the nights before it
    assert gate["verdict"] == "unchanged" and gate["p_value"] == pytest.approx(20 / 330, abs=1e-15)
    assert (gate["n_baseline"], gate["n_candidate"]) == (7, 4)


def test_run_night_is_a_library_call_that_runs_records_and_judges(tmp_path, monkeypatch):
    """`run_night` without the CLI: each repeat launched and recorded, tonight's verdicts and the entry's series
    returned; the night's files appear only when `write_night` keeps them."""
    from benchbed.nightly.run import run_night
    from benchbed.report.nightly import write_night
    from benchbed.store import Store

    monkeypatch.setenv("BENCHBED_MACHINE", "lib-box")
    (tmp_path / "quickstart.toml").write_text(QUICKSTART.read_text())
    (tmp_path / "suite.toml").write_text(TRAINER_BOUND.replace("repeats = 1", "repeats = 2"))
    suite, planned = load_suite(tmp_path / "suite.toml")
    heard = []
    night = run_night(suite, planned, Store(tmp_path / "store"), on_run=lambda label, r: heard.append(label))
    assert heard == ["trainer-bound (1/2)", "trainer-bound (2/2)"]
    assert [r.status for r in night.records] == ["succeeded"] * 2 and night.failed == []
    assert night.machine == "lib-box" and night.title.startswith("steps on lib-box, night ")
    (verdict,) = night.verdicts
    assert (verdict.metric, verdict.verdict, verdict.comparison.n_candidate) == ("trainer_throughput_sps",
                                                                                 "insufficient_data", 2)  # fmt: skip
    (series,) = night.series
    assert [n.night for n in series.nights] == [night.night] and series.verdict is verdict
    assert not night.folder.exists()
    page = write_night(night)
    assert page == night.folder / "nightly.html"
    assert sorted(p.name for p in night.folder.iterdir()) == ["nightly.html", "summary.md", "verdicts.json"]
