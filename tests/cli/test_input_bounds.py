"""Counts that allocate are bounded at validation, with spec-field strictness, and command-line gate and metric
options are checked like their suite-file counterparts: refused up front with one line, nothing run or stored."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.errors import SpecError
from benchbed.nightly.suite import load_suite
from benchbed.sim import BYTES_PER_SAMPLE, BYTES_PER_SLOT, memory_needed
from benchbed.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "experiments" / "quickstart.toml"


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="benchbed")


def error_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert len(lines) >= 1 and result.exit_code == 2, result.output
    return lines[-1]


def suite(folder: Path, entry: str) -> Path:
    shutil.copy(QUICKSTART, folder / "q.toml")
    path = folder / "suite.toml"
    path.write_text(f'name = "s"\n[[entry]]\nname = "q"\nspec = "q.toml"\n{entry}\n')
    return path


# ---------------------------------------------------------------------------------------------- repeats
@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("repeats = 100000000000", "field 'entry.0.repeats': Input should be less than or equal to 1000"),
        ('repeats = "3"', "field 'entry.0.repeats': Input should be a valid integer (got '3')"),
        ("repeats = true", "field 'entry.0.repeats': Input should be a valid integer (got True)"),
    ],
)
def test_suite_repeats_are_bounded_and_never_coerced(tmp_path: Path, entry: str, problem: str) -> None:
    path = suite(tmp_path, entry)
    with pytest.raises(SpecError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}: {problem}")


@pytest.mark.parametrize(("value", "problem"), [("100000000000", "less than or equal to 1000"),
                                                ("true", "valid integer"), ('"3"', "valid integer")])  # fmt: skip
def test_spec_repeats_are_bounded_and_never_coerced(value: str, problem: str) -> None:
    with pytest.raises(SpecError, match=rf"quickstart.toml: field 'repeats': Input should be (a )?{problem}"):
        load_spec(QUICKSTART, [f"repeats={value}"])


def test_the_largest_repeats_is_planned_without_copying_the_spec_up_front(tmp_path: Path) -> None:
    from benchbed.spec import repeated

    copies = repeated(load_spec(QUICKSTART, ["repeats=1000"]))
    first = next(copies)
    assert first.repeat == 0 and next(copies).repeat == 1  # made one by one, as each launches


def test_a_matrix_of_too_many_points_is_refused_before_expansion(tmp_path: Path) -> None:
    spec = tmp_path / "m.toml"
    values = ", ".join(str(v) for v in range(64, 64 + 200))
    spec.write_text(QUICKSTART.read_text() + f'\n[matrix]\n"sim.concurrency" = [{values}]\n"sim.seed" = [{values}]\n')
    result = invoke("run", spec, "--store", tmp_path / "store")
    assert error_line(result) == (
        f"benchbed: error: {spec}: [matrix] expands to 200 x 200 = 40,000 points; at most 10,000"
    )
    assert not (tmp_path / "store").exists()


# ------------------------------------------------------------------------------------- concurrency, plan
def test_concurrency_is_bounded_and_counted_in_the_memory_check() -> None:
    with pytest.raises(SpecError, match=r"field 'sim.concurrency': Input should be less than or equal to 1000000"):
        from benchbed.sim import sim_params

        sim_params(load_spec(QUICKSTART, ["sim.concurrency=1000001"]))
    assert memory_needed(10, 4) == 10 * BYTES_PER_SAMPLE + 4 * BYTES_PER_SLOT


def test_plan_refuses_a_huge_range_up_front_with_a_memory_estimate(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchbed", "plan", str(QUICKSTART), "--target", "trainer_idle_ratio<=0.1",
         "--vary", "sim.concurrency", "--range", "16:100000000", "-o", str(tmp_path / "p.html")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    gib = memory_needed(200 * 64, 100_000_000) / 2**30
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "benchbed: error: --range 16:100000000: sim.concurrency is at most 1,000,000; simulating 100,000,000 "
        f"generator slots would need about {gib:,.1f} GiB of memory"
    )
    assert not (tmp_path / "p.html").exists()


def test_plan_checks_the_ranges_largest_point_before_simulating(tmp_path: Path) -> None:
    result = invoke("plan", QUICKSTART, "--target", "trainer_idle_ratio<=0.1", "--vary", "workload.max_staleness",
                    "--range", "0:20000000", "-o", tmp_path / "p.html")  # fmt: skip
    assert error_line(result) == "benchbed: error: --range 0:20000000: workload.max_staleness is at most 10,000,000"


# -------------------------------------------------------------------------------- compare's gate options
@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--alpha", "5", "Input should be less than 1 (got 5.0)"),
        ("--alpha", "nan", "Input should be a finite number (got nan)"),
        ("--alpha", "0", "Input should be greater than 0 (got 0.0)"),
        ("--min-effect", "-1", "Input should be greater than or equal to 0 (got -1.0)"),
        ("--min-effect", "inf", "Input should be a finite number (got inf)"),
    ],
)
def test_compare_gate_options_are_validated_like_the_suites_gate(tmp_path, option, value, problem) -> None:
    result = invoke("compare", tmp_path / "a", "--vs", tmp_path / "b", option, value)
    assert error_line(result) == (
        f"benchbed: error: benchbed compare: Invalid value for {option}: {problem} (see benchbed compare --help)"
    )


def test_history_refuses_an_unknown_metric_like_compare(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    result = invoke("history", "--store", tmp_path / "store", "--metric", "foo")
    assert error_line(result) == (
        "benchbed: error: --metric foo: not a metric this benchbed computes (docs/reference/metrics.md)"
    )


# ---------------------------------------------------------------------------------------- suite messages
def test_a_missing_suite_file_is_called_a_suite_file(tmp_path: Path) -> None:
    result = invoke("nightly", tmp_path / "nightly.toml", "--store", tmp_path / "store")
    assert error_line(result) == (
        f"benchbed: error: {tmp_path / 'nightly.toml'}: suite file not found; pass a TOML suite such as "
        "experiments/nightly-cpu.toml"
    )


def test_a_bad_set_in_a_suite_entry_is_reported_against_the_entry(tmp_path: Path) -> None:
    path = suite(tmp_path, 'set = ["workload.steps=10", "sim.concurrency=-4"]')
    with pytest.raises(SpecError) as caught:
        load_suite(path)
    assert str(caught.value) == (
        f"{path} (entry 'q'): set = ['workload.steps=10', 'sim.concurrency=-4']: field 'sim.concurrency': "
        "Input should be greater than 0 (got -4)"
    )
    path = suite(tmp_path, 'set = ["nokey"]')
    with pytest.raises(SpecError, match=r"suite.toml \(entry 'q'\): set 'nokey': expected KEY=VALUE"):
        load_suite(path)
    path = suite(tmp_path, 'set = ["workload.steps=10"]')
    (tmp_path / "q.toml").write_text(QUICKSTART.read_text().replace("[sim]", "bogus = 1\n[sim]"))
    with pytest.raises(SpecError, match=rf"^{tmp_path / 'q.toml'}: unknown field 'resources.bogus'"):
        load_suite(path)  # the spec file's own mistake is still the spec file's


def test_matrix_points_are_printed_with_their_labels(tmp_path: Path) -> None:
    spec = tmp_path / "q.toml"
    spec.write_text(QUICKSTART.read_text() + '\n[matrix]\n"sim.concurrency" = [64, 128]\n')
    path = tmp_path / "suite.toml"
    path.write_text('name = "s"\n[[entry]]\nname = "q"\nspec = "q.toml"\nset = ["workload.steps=6"]\n')
    result = subprocess.run([sys.executable, "-m", "benchbed", "nightly", str(path), "--store", str(tmp_path / "st")],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[:2] == ["q[sim.concurrency=64] (1/1): succeeded",
                                              "q[sim.concurrency=128] (1/1): succeeded"]  # fmt: skip
    entries = {json.loads(p.read_text())["suite"]["entry"] for p in (tmp_path / "st").rglob("record.json")}
    assert entries == {"q[sim.concurrency=64]", "q[sim.concurrency=128]"}


def test_a_record_watching_an_unknown_metric_keeps_its_series_with_a_warning(tmp_path: Path) -> None:
    path = suite(tmp_path, 'set = ["workload.steps=6"]\nwatch = ["trainer_idle_ratio"]')
    store = tmp_path / "st"
    night = subprocess.run([sys.executable, "-m", "benchbed", "nightly", str(path), "--store", str(store)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert night.returncode == 0, night.stderr
    record_path = next(store.rglob("record.json"))
    record = json.loads(record_path.read_text())
    record["suite"]["watch"] = ["metric_from_a_newer_benchbed"]
    record_path.write_text(json.dumps(record))
    shutil.rmtree(store / "_catalog")  # a record edited in place is seen once the catalog is rebuilt
    result = CliRunner().invoke(cli, ["history", "--store", str(store), "--json"], prog_name="benchbed")
    assert result.exit_code == 0, result.output
    shown = {(s["entry"], s["metric"]) for s in json.loads(result.stdout)["series"]}
    assert ("q", "trainer_idle_ratio") in shown and len(shown) >= 5  # the default watch of what it reports
    assert "warning: q on " in result.stderr and "metric_from_a_newer_benchbed, unknown to this benchbed" in (
        result.stderr
    )
