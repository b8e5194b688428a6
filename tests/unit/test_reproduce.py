"""`benchbed reproduce`: the case specs are readable derivations and the table's rows hold on a short run."""

from __future__ import annotations

import fnmatch
import json
import re
from importlib import resources
from pathlib import Path

import tomllib
from click.testing import CliRunner

from benchbed.cli.main import cli
from benchbed.sim.reproduce import CASE_FILES, EXPERIMENTS, case_specs


def test_every_case_parameter_says_where_it_came_from():
    for files in CASE_FILES.values():
        for name in files:
            for line in (EXPERIMENTS / name).read_text().splitlines():
                code = line.split("#", 1)[0]
                if (
                    re.match(r"^\s*[\w\"]", code)
                    and "=" in code
                    and not code.strip().startswith(("name", "adapter", "description"))
                ):
                    assert re.search(r"PUBLISHED|DERIVED|ASSUMED|as case", line), f"{name}: {line}"


def test_case_specs_match_the_published_configuration():
    (case1,) = case_specs("case1")
    assert case1.workload.samples_per_step == 512 and case1.workload.max_staleness == 16
    assert case1.sim["train_step_time"] == round(512 / 2.75, 1)
    levels = sorted(spec.adapter_table("sim")["concurrency"] for spec in case_specs("case3"))
    assert levels == [96, 256, 360, 960]


def test_reproduce_json_rows_are_within_tolerance():
    result = CliRunner().invoke(cli, ["reproduce", "case4", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {tuple(sorted(row)) for row in rows} == {
        ("case", "inputs", "kind", "ok", "published", "quantity", "reproduced", "tolerance")
    }
    assert {row["case"] for row in rows} == {"case4"}
    assert all(row["ok"] for row in rows)
    assert any(row["kind"] == "prediction" for row in rows)
    idle = next(row for row in rows if row["quantity"] == "trainer idle")
    assert abs(idle["reproduced"] - 0.60) <= 0.05


def test_case_specs_ship_as_package_data():
    """reproduce reads the specs through importlib.resources from benchbed/data/reproduce, and pyproject's
    package-data globs take every one of them into a wheel, so a non-editable install finds them too."""
    package = Path(str(resources.files("benchbed")))
    assert Path(str(EXPERIMENTS)) == package / "data" / "reproduce"
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["benchbed"]
    for files in CASE_FILES.values():
        for name in files:
            assert (EXPERIMENTS / name).is_file()
            assert any(fnmatch.fnmatch(f"data/reproduce/{name}", g) for g in globs), name


def test_slowest_sandbox_start_runs_from_first_request_to_last_attempt():
    from benchbed.sim.reproduce import slowest_sandbox_start_s
    from benchbed.trace import TraceBuilder, TraceMeta

    b = TraceBuilder()
    b.span("sandbox.queue", 0.0, 100.0, sample="1")  # sample 1: queued 100 s, failed at 399, retried, up at 760
    b.span("sandbox.start", 100.0, 399.0, sample="1", status="start_timeout")
    b.span("sandbox.start", 429.0, 760.0, sample="1", status="ok")
    b.span("sandbox.start", 50.0, 60.0, sample="2", status="ok")
    assert slowest_sandbox_start_s(b.build(TraceMeta(adapter="t"))) == 760.0
