"""`benchbed nightly --watch` (issue 38): each launch of the night is followed live as `benchbed run --watch` follows
one, and what the follower reports (the alarms that fired) joins that run's stored record; a suite with an entry
whose adapter cannot be followed is refused in one line before anything runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.nightly.run import run_night
from benchbed.nightly.suite import load_suite
from benchbed.spec import ExperimentSpec
from benchbed.store import Store, read_record

REPO = Path(__file__).resolve().parents[2]
SUITE = """
name = "watched"
[[entry]]
name = "quick"
spec = "quickstart.toml"
repeats = 2
set = ["workload.steps=5"]
"""


@dataclass
class Recorder:
    """Stands in for the CLI's RunWatcher: it hears each run directory and reports one alarm line per run."""

    label: str
    started: list[Path] = field(default_factory=list)

    def start(self, run_dir: Path) -> None:
        self.started.append(run_dir)

    def warnings(self) -> list[str]:
        return [f"alarm stall: {self.label}"]


def test_each_launch_is_followed_and_its_alarms_join_its_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BENCHBED_MACHINE", "watch-box")
    (tmp_path / "quickstart.toml").write_text((REPO / "experiments" / "quickstart.toml").read_text())
    (tmp_path / "suite.toml").write_text(SUITE)
    suite, planned = load_suite(tmp_path / "suite.toml")
    followed: list[Recorder] = []

    @contextmanager
    def follow(spec: ExperimentSpec) -> Iterator[Recorder]:
        followed.append(Recorder(f"{spec.name} repeat {spec.repeat}"))
        yield followed[-1]

    night = run_night(suite, planned, Store(tmp_path / "store"), follow=follow)
    assert [len(r.started) for r in followed] == [1, 1]  # one follower per launch, told its run directory once
    for recorder, record in zip(followed, night.records, strict=True):
        assert f"alarm stall: {recorder.label}" in record.warnings
        stored = read_record(recorder.started[0] / "record.json")
        assert stored.warnings == record.warnings  # the record on disk keeps the alarm too


def test_a_suite_with_an_entry_that_cannot_be_watched_is_refused_in_one_line(benchbed, tmp_path: Path) -> None:
    (tmp_path / "quickstart.toml").write_text((REPO / "experiments" / "quickstart.toml").read_text())
    (tmp_path / "suite.toml").write_text(SUITE)
    env = {"BENCHBED_MACHINE": "watch-box"}
    refused = benchbed("nightly", tmp_path / "suite.toml", "--watch", "--store", tmp_path / "store", env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"benchbed: error: {tmp_path / 'suite.toml'}: benchbed watch follows areal, example_history, miles, nemo_rl, "
        "open_instruct, openrlhf, prime_rl, ref, rllm, roll, skyrl, slime, tinker_cookbook, trl, verl runs live; the "
        "sim adapter's files are read once the run ends (benchbed ingest)"
    ]
    alone = benchbed("nightly", tmp_path / "suite.toml", "--on-alarm", "true", "--store", tmp_path / "store", env=env)
    assert alone.returncode == 2 and "add --watch" in alone.stderr
    assert not (tmp_path / "store").exists()
