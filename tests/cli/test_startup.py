"""Start-up: `benchbed --help` and `--version` load no command module and none of the heavy libraries; each command
imports what it uses when it runs. (Timing lives in benchmarks/test_bench_startup.py, not here.)"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from benchbed.cli.main import COMMANDS, cli
from benchbed.cli.summaries import summary_of

HEAVY = ("pandas", "duckdb", "pyarrow", "matplotlib", "numpy", "pydantic", "rich", "jinja2")

PROBE = """
import json, sys
from benchbed.cli.main import cli
try:
    cli.main(sys.argv[1:], prog_name="benchbed")  # not cli(...): a command that ends at once would end the probe
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {heavy} or name.startswith("benchbed"))))
"""


def _loaded_after(*args: str) -> list[str]:
    probe = PROBE.replace("{heavy}", repr(set(HEAVY)))
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_no_heavy_library_and_no_command(flag: str) -> None:
    loaded = _loaded_after(flag)
    assert [name for name in loaded if name.split(".")[0] in HEAVY] == []
    assert set(loaded) <= {"benchbed", "benchbed.cli", "benchbed.cli.main", "benchbed.cli.summaries", "benchbed.errors",
                           "benchbed.launch", "benchbed.launch.signals", "benchbed.registry"}  # fmt: skip


def test_a_command_loads_its_own_module_only_when_invoked() -> None:
    loaded = _loaded_after("export", "--help")
    assert "benchbed.cli.export" in loaded
    assert "benchbed.cli.runs" not in loaded and "benchbed.cli.nightly" not in loaded


def test_help_lists_every_command_with_the_summary_of_its_own_docstring() -> None:
    """The summaries `benchbed --help` reads from each command's source are what the imported command says,
    shortened to the column."""
    for name in COMMANDS.names():
        command = COMMANDS.load(name)
        assert isinstance(command, click.Command) and command.name == name
        for limit in (45, 60, 10_000):
            said = click.utils.make_default_short_help(command.get_short_help_str(10_000), limit)
            assert summary_of(COMMANDS.reference(name), limit) == said, (name, limit)
    context = click.Context(cli)
    assert cli.list_commands(context) == COMMANDS.names()


def test_ls_answers_from_the_index_without_pandas_pydantic_or_the_launch_commands(tmp_path) -> None:
    """`benchbed ls` on an indexed store parses no record (no pydantic), loads no metric function and no launch
    command. (DuckDB itself imports pandas as soon as it is handed an Arrow table.)"""
    from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, RunRecord
    from benchbed.store import Store

    store = Store(tmp_path)
    machine = MachineInfo(name="m", host="h", os="Linux", cpu="c", cpu_count=1, python="3.11")
    record = RunRecord(spec={"name": "a"}, spec_id="a-1", adapter=AdapterInfo(name="sim", mode="async"),
                       benchbed=BenchbedInfo(version="0.1.0", commit="c0ffee"), status="succeeded",
                       machine=machine)  # fmt: skip
    store.save(store.new_run_dir("m", "sim", "a-1", "c0ffee"), record)
    store.table()  # the first query indexes the store
    loaded = _loaded_after("ls", "--store", str(tmp_path))
    assert {"pyarrow", "duckdb", "benchbed.cli.ls"} <= {name.split(".")[0] for name in loaded} | set(loaded)
    assert [name for name in loaded if name.split(".")[0] in ("pydantic", "rich")] == []
    assert "benchbed.cli.runs" not in loaded and "benchbed.metrics.compute" not in loaded


def test_history_needs_no_pandas_launcher_or_metric_function_and_draws_only_for_a_page(tmp_path) -> None:
    """`benchbed history` reads the catalog as Arrow arrays and judges with numpy: no pandas, no metric function
    (directions come from the registry), no launch command; the report package and matplotlib only for `-o PAGE`."""
    from benchbed.record import AdapterInfo, BenchbedInfo, MachineInfo, MetricValue, RunRecord, SuiteInfo
    from benchbed.store import Store

    store = Store(tmp_path)
    machine = MachineInfo(name="m", host="h", os="Linux", cpu="c", cpu_count=1, python="3.11")
    for night in range(3):
        record = RunRecord(spec={"name": "a"}, spec_id="a-1", adapter=AdapterInfo(name="sim", mode="async"),
                           benchbed=BenchbedInfo(version="0.1.0", commit="c0ffee"), status="succeeded",
                           machine=machine, started_at=f"2026-01-0{night + 1}T00:00:00+00:00",
                           suite=SuiteInfo(name="s", entry="a", night=f"n{night}", watch=["trainer_idle_ratio"]),
                           metrics={"trainer_idle_ratio": MetricValue(value=0.5, unit="ratio")})  # fmt: skip
        store.save(store.new_run_dir("m", "sim", "a-1", f"c0ffee{night}"), record)
    store.table()  # the first query indexes the store
    loaded = _loaded_after("history", "--store", str(tmp_path))
    assert "benchbed.cli.history" in loaded and "benchbed.nightly.history" in loaded
    assert [name for name in loaded if name.split(".")[0] in ("pandas", "pydantic", "rich")] == []
    assert "benchbed.record" not in loaded  # the recorded gate is read as GateSettings, without pydantic's models
    assert [name for name in loaded if name.startswith(("benchbed.metrics.compute", "benchbed.launch.base",
                                                         "benchbed.cli.nightly", "benchbed.report"))] == []  # fmt: skip
    assert "matplotlib" not in loaded
    assert "matplotlib" in _loaded_after("history", "--store", str(tmp_path), "-o", str(tmp_path / "history.html"))
    # the command as a process ends at once when its output is flushed: the whole document, and its exit status
    done = subprocess.run([sys.executable, "-m", "benchbed", "history", "--store", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and [len(s["nights"]) for s in json.loads(done.stdout)["series"]] == [3]
    refused = subprocess.run([sys.executable, "-m", "benchbed", "history", "--store", str(tmp_path), "--metric", "x"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.startswith("benchbed: error: --metric x: not a metric")
