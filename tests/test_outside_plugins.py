"""One package outside the tree adds one of each extension kind (adapter, launcher with options, sandbox backend,
history source, metric, study, lever set, CLI command), each as one module plus one entry point, and benchbed uses
each."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from benchbed import keys as K
from benchbed.adapter import available_adapters, get_adapter
from benchbed.adapterkit.histories import history_kind, open_history
from benchbed.diagnosis.levers import levers_for
from benchbed.diagnosis.rules import Diagnosis
from benchbed.errors import SpecError
from benchbed.launch.base import available_launchers, get_launcher
from benchbed.metrics import compute_metrics
from benchbed.metrics.registry import METRIC_FUNCTIONS, METRICS, PRESENTATION
from benchbed.sandbox.registry import get_backend
from benchbed.sim.reproduce import reproduce, resolve
from benchbed.spec import build_spec
from benchbed.trace import Trace, TraceMeta

MODULES = {
    "adapter": """
        from pathlib import Path

        from pydantic import BaseModel, ConfigDict

        from benchbed.api import Adapter, LaunchPlan


        class OutsideOptions(BaseModel):
            model_config = ConfigDict(extra="forbid")
            knob: int = 3


        class OutsideAdapter(Adapter):
            name = "outside"
            options_model = OutsideOptions

            def render(self, spec, run_dir: Path) -> LaunchPlan:
                return LaunchPlan(argv=["echo", str(spec.adapter_options().knob)])

            def parse(self, path: Path):
                raise NotImplementedError
    """,
    "launcher": """
        from pydantic import BaseModel, ConfigDict

        from benchbed.api import Launcher, LauncherFlag


        class QueueOptions(BaseModel):
            model_config = ConfigDict(extra="forbid")
            priority: int = 0


        class OutsideLauncher(Launcher):
            name = "outside_queue"
            options_model = QueueOptions
            flags = (LauncherFlag("--queue-name", "queue", help="the site queue to submit to", metavar="QUEUE"),)

            def __init__(self, queue: str = "night") -> None:
                self.queue = queue

            def launch(self, spec, plan, run_dir, timeout_s=None, on_line=None):
                raise NotImplementedError

            def describe(self, spec, plan, run_dir):
                return [f"queue {self.queue}"]
    """,
    "backend": """
        from benchbed.sandbox.local import LocalBackend


        class OutsideBackend(LocalBackend):
            name = "outside_box"
    """,
    "history": '''
        from pathlib import Path

        import pandas as pd

        from benchbed.api import History, HistoryReader
        from benchbed.adapterkit.histories.history import HistorySource


        class CsvSteps(HistoryReader):
            """A CSV of `step,<key>...` rows: a tracker benchbed does not know."""

            name = "csvsteps"

            def detects(self, location) -> bool:
                return str(location).endswith(".steps.csv") and Path(location).is_file()

            def open(self, location, progress=None, timeout_s=30.0) -> History:
                frame = pd.read_csv(location)
                frame["wall_time"] = float("nan")
                return History(HistorySource("csvsteps", Path(location).stem, str(location)), frame)
    ''',
    "metric": """
        from benchbed.api import Presentation, metric


        @metric("outside_step_count", "steps", "trainer steps in the trace", Presentation("other", None))
        def outside_step_count(ctx):
            return float(len(ctx.rows("trainer.step"))), "span"
    """,
    "study": """
        from pathlib import Path

        from benchbed.api import Row, Study

        STUDY = Study(
            "outside-study",
            "An outside study: one case of one spec",
            {"one": ("one.toml",)},
            {"one": lambda runs: [Row("outside-study/one", "runs", 1.0, float(len(runs)), "exact", True,
                                      "consistency", [])]},
            folder=Path(__file__).parent / "specs",
        )
    """,
    "levers": """
        LEVERS = {"generation_bound": [{"field": "outside.knob", "direction": "increase", "why": "more knob"}]}
    """,
    "command": '''
        import click

        NOT_A_COMMAND = 3


        @click.command("outside-hello")
        @click.argument("who")
        def hello(who: str) -> None:
            """Greet WHO from a package outside benchbed.

            The rest of the help, which the command list leaves out."""
            click.echo(f"hello {who}")
    ''',
}
ENTRY_POINTS = """
[benchbed.adapters]
outside = outside_ext.adapter:OutsideAdapter

[benchbed.launchers]
outside_queue = outside_ext.launcher:OutsideLauncher

[benchbed.sandbox_backends]
outside_box = outside_ext.backend:OutsideBackend

[benchbed.history_sources]
csvsteps = outside_ext.history:CsvSteps

[benchbed.metrics]
outside_step_count = outside_ext.metric:outside_step_count

[benchbed.studies]
outside-study = outside_ext.study:STUDY

[benchbed.levers]
outside = outside_ext.levers:LEVERS

[benchbed.commands]
outside-hello = outside_ext.command:hello
outside-broken = outside_ext.command:NOT_A_COMMAND
"""


@pytest.fixture
def outside(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """The package `outside_ext` with a .dist-info naming one object per kind, put on sys.path."""
    package = tmp_path / "outside_ext"
    (package / "specs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for module, source in MODULES.items():
        (package / f"{module}.py").write_text(textwrap.dedent(source))
    (package / "specs" / "one.toml").write_text('name = "one"\nadapter = "outside"\n[outside]\nknob = 5\n')
    info = tmp_path / "outside_ext-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-ext\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = [(METRICS, dict(METRICS)), (PRESENTATION, dict(PRESENTATION)),
             (METRIC_FUNCTIONS._registered, dict(METRIC_FUNCTIONS._registered))]  # fmt: skip
    yield tmp_path
    # The outside metric's @metric registered it in this process: leave the built-in set as it was for later tests.
    for table, before in saved:
        table.clear()
        table.update(before)
    for module in [name for name in sys.modules if name == "outside_ext" or name.startswith("outside_ext.")]:
        del sys.modules[module]


def test_an_outside_adapter_owns_its_spec_table(outside: Path, tmp_path: Path) -> None:
    assert "outside" in available_adapters()
    spec = build_spec({"name": "x", "adapter": "outside", "outside": {"knob": 7}})
    assert get_adapter("outside").render(spec, tmp_path).argv == ["echo", "7"]
    with pytest.raises(SpecError, match=r"field 'outside.knob': Input should be a valid integer"):
        build_spec({"name": "x", "adapter": "outside", "outside": {"knob": "many"}})


def test_an_outside_launcher_owns_its_spec_table_and_its_flags(outside: Path) -> None:
    assert "outside_queue" in available_launchers()
    assert get_launcher("outside_queue", queue="day").describe(None, None, None) == ["queue day"]
    spec = build_spec({"name": "x", "adapter": "sim", "outside_queue": {"priority": 2}})
    assert spec.launcher_options("outside_queue").priority == 2
    assert build_spec({"name": "x", "adapter": "sim"}).launcher_options("outside_queue").priority == 0
    with pytest.raises(SpecError, match=r"unknown field 'outside_queue.prio'"):
        build_spec({"name": "x", "adapter": "sim", "outside_queue": {"prio": 2}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(outside), os.environ.get("PYTHONPATH")]))}
    shown = subprocess.run([sys.executable, "-m", "benchbed", "run", "--help"], capture_output=True, text=True,
                           env=env, timeout=120)  # fmt: skip
    assert (
        shown.returncode == 0
        and "--queue-name QUEUE" in shown.stdout
        and "the site queue to submit to" in (shown.stdout)
    )


def test_an_outside_sandbox_backend_is_found_by_name(outside: Path) -> None:
    assert type(get_backend("outside_box")).__name__ == "OutsideBackend"
    assert build_spec({"name": "x", "adapter": "sim", "sandbox": {"backend": "outside_box"}}).sandbox.backend == (
        "outside_box"
    )


def test_an_outside_history_source_is_detected_and_read_by_adapters(outside: Path, tmp_path: Path) -> None:
    path = tmp_path / "run.steps.csv"
    path.write_text("step,reward\n1,0.5\n2,0.75\n")
    assert history_kind(path) == "csvsteps"
    history = open_history(path)
    assert history.keys == ["reward"] and history.frame["reward"].tolist() == [0.5, 0.75]
    support = get_adapter("verl").history()
    assert support is not None and "csvsteps" in support.kinds


def test_an_outside_metric_is_computed_with_the_built_in_ones(outside: Path) -> None:
    rows = [{"key": K.TRAINER_STEP, "kind": "span", "step": i, "t0": float(i), "t1": i + 1.0} for i in range(1, 5)]
    trace = Trace(events=pd.DataFrame(rows), meta=TraceMeta(adapter="outside"))
    metrics = compute_metrics(trace, warmup_steps=1)
    assert metrics["outside_step_count"].value == 4.0 and metrics["outside_step_count"].unit == "steps"


def test_an_outside_study_is_resolved_and_reproduced_from_its_own_folder(outside: Path) -> None:
    assert resolve("outside-study") == [("outside-study", "one")]
    seen = []
    rows = reproduce(["outside-study/one"], simulate=lambda spec: seen.append(spec.adapter_options().knob) or spec)
    assert seen == [5] and [(r.case, r.reproduced, r.ok) for r in rows] == [("outside-study/one", 1.0, True)]


def test_an_outside_lever_set_adds_levers_for_its_adapter(outside: Path) -> None:
    diagnosis = Diagnosis(regime="generation_bound", flags=[], evidence=[])
    fields = [lever.field for lever in levers_for(diagnosis, "outside", {"outside": {"knob": 2}})]
    assert "outside.knob" in fields and not any(f.startswith("sim.") for f in fields)


def test_an_outside_cli_command_is_listed_from_its_source_and_runs(outside: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(outside), os.environ.get("PYTHONPATH")]))}

    def benchbed(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "benchbed", *args], capture_output=True, text=True, env=env,
                              timeout=120)  # fmt: skip

    shown = benchbed("--help")
    listed = {line.split()[0]: " ".join(line.split()[1:]) for line in shown.stdout.splitlines() if line[:3] == "  o"}
    assert shown.returncode == 0 and listed["outside-hello"] == "Greet WHO from a package outside benchbed."
    assert listed["outside-broken"].startswith("entry point 'outside-broken'")  # listed with why it cannot load
    ran = benchbed("outside-hello", "world")
    assert (ran.returncode, ran.stdout) == (0, "hello world\n")
    broken = benchbed("outside-broken")
    assert (broken.returncode, broken.stdout) == (2, "")
    assert broken.stderr.strip() == (
        "benchbed: error: entry point 'outside-broken' (outside_ext.command:NOT_A_COMMAND) is not a click.Command"
    )
