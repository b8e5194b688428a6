"""One night of a suite: launch every entry's repeats, then gate each watched metric against the nights before.

`run_night` is to a suite what `pipeline.execute` is to one spec: it runs, records and judges, and returns a
`Night`; rendering its page, summary and JUnit XML is `report.nightly.write_night`, printing is the CLI's."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from benchbed.launch.base import Launcher, get_launcher
from benchbed.nightly.history import Series, build_series, load_points, night_verdicts
from benchbed.nightly.regimes import EntryRegime, entry_regimes
from benchbed.nightly.stats import EntryVerdict, default_watch
from benchbed.nightly.suite import PlannedEntry, Suite
from benchbed.nightly.trust import untrusted_nights
from benchbed.pipeline import execute, preflight
from benchbed.record import RunRecord, SuiteInfo, machine_info, utc_now
from benchbed.spec import ExperimentSpec, repeated
from benchbed.store import Store

NIGHTLY_DIRNAME = "_nightly"  # <store>/_nightly/<machine>/<suite>/<night>/: page, summary, verdicts, JUnit
Progress = Callable[[str], AbstractContextManager[Callable[[str], None]]]


class Following(Protocol):
    """What follows one launch live (`benchbed nightly --watch`: benchbed.cli.watch.RunWatcher): told the run
    directory once the run claims it; afterwards, the lines (alarms, what could not be read) its record keeps."""

    def start(self, run_dir: Path) -> None: ...

    def warnings(self) -> list[str]: ...


Follow = Callable[[ExperimentSpec], AbstractContextManager[Following]]


@dataclass
class Night:
    """What a night ran and concluded: every run's record, tonight's verdicts and each entry's series."""

    suite: Suite
    machine: str
    night: str
    folder: Path  # where the night's page, summary and verdicts are kept
    records: list[RunRecord] = field(default_factory=list)
    verdicts: list[EntryVerdict] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    regimes: list[EntryRegime] = field(default_factory=list)  # each entry's diagnosis tonight and the night before
    skipped: list[str] = field(default_factory=list)  # unreadable records of the store, left out of the history
    warnings: list[str] = field(default_factory=list)  # e.g. a series whose latest run watches an unknown metric

    @property
    def title(self) -> str:
        return f"{self.suite.name} on {self.machine}, night {self.night}"

    @property
    def failed(self) -> list[RunRecord]:
        return [r for r in self.records if r.status == "failed"]


def night_id() -> str:
    """Names one night (one invocation of a suite); sorts by time."""
    return f"{utc_now().strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}"


def run_night(
    suite: Suite,
    planned: Sequence[PlannedEntry],
    store: Store,
    launcher: str | Launcher = "local",
    timeout_s: float | None = None,
    progress: Progress | None = None,
    on_run: Callable[[str, RunRecord], None] | None = None,
    follow: Follow | None = None,
) -> Night:
    """Run each planned entry its repeats (checked launchable first), then judge tonight against the history.

    `progress(label)` gives each launch its line callback (a progress bar); `follow(spec)` follows each launch live
    and its warnings join the run's record; `on_run(label, record)` hears of each finished run. A failed launch
    keeps its record and the night goes on."""
    launcher = get_launcher(launcher) if isinstance(launcher, str) else launcher
    store_machine = machine_info().name
    night = night_id()
    preflight([entry.spec for entry in planned], store, launcher)  # the whole night is launchable before it starts
    result = Night(suite, store_machine, night, store.root / NIGHTLY_DIRNAME / store_machine / suite.name / night)
    for entry in planned:
        info = SuiteInfo(name=suite.name, entry=entry.name, night=night, watch=list(entry.watch), gate=entry.gate)
        for spec in repeated(entry.spec):
            label = f"{entry.name} ({spec.repeat + 1}/{spec.repeats})"
            with (progress or _silent)(label) as on_line, (follow or _unfollowed)(spec) as following:
                outcome = execute(spec, store, on_line=on_line, timeout_s=timeout_s, suite=info, launcher=launcher,
                                  on_run_dir=following.start if following else None)  # fmt: skip
            if following is not None and following.warnings():  # the alarms that fired go into the record
                outcome.record.warnings.extend(following.warnings())
                store.save(outcome.run_dir, outcome.record)
            result.records.append(outcome.record)
            if on_run is not None:
                on_run(label, outcome.record)
    points, result.skipped = load_points(store, machine=store_machine)
    untrusted = untrusted_nights(store.root)
    for entry in planned:
        tonight = points[(points["entry"] == entry.name) & (points["night"] == night)]
        metrics = list(entry.watch) or default_watch(tonight["metric"])
        result.verdicts += night_verdicts(points, store_machine, entry.name, night, metrics, entry.gate, untrusted)
    result.series = build_series(points[points["entry"].isin({e.name for e in planned})], warnings=result.warnings,
                                 untrusted=untrusted)  # fmt: skip
    result.regimes = entry_regimes(points, list(dict.fromkeys(e.name for e in planned)), night)
    by_key = {(s.entry, s.metric): s for s in result.series}
    for verdict in result.verdicts:  # the page shows tonight's verdicts even where tonight's value is missing
        if (verdict.entry, verdict.metric) in by_key:
            by_key[(verdict.entry, verdict.metric)].verdict = verdict
    return result


def _silent(label: str) -> AbstractContextManager[Callable[[str], None]]:
    return nullcontext(lambda line: None)


def _unfollowed(spec: ExperimentSpec) -> AbstractContextManager[None]:
    return nullcontext()
