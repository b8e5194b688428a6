"""`benchbed nightly` and `benchbed compare`: suites with repeats, and the regression gate (`benchbed history` is
benchbed.cli.history). Statistics and page rendering are imported when a command runs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from benchbed.cli.console import err_console, launch_progress, stdout_console
from benchbed.cli.launch_options import build_launcher, launcher_options
from benchbed.cli.store_options import store_option
from benchbed.cli.watch import following, watch_options
from benchbed.errors import BenchbedError, SpecError
from benchbed.nightly.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, EntryVerdict, default_watch, metric_direction
from benchbed.nightly.suite import load_suite
from benchbed.outputs import check_output
from benchbed.record import Gate, RunRecord
from benchbed.store import Store, read_record

if TYPE_CHECKING:
    from benchbed.nightly.run import Follow, Following
    from benchbed.spec import ExperimentSpec

EXIT_REGRESSION = 3

fail_on_option = click.option(
    "--fail-on", type=click.Choice(["regression"]), default=None,
    help=f"exit with status {EXIT_REGRESSION} when any verdict is a regression",
)  # fmt: skip
junit_option = click.option(
    "--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="also write the verdicts as JUnit XML (a regression is a failed test case)",
)  # fmt: skip

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='print {"runs": [...], "verdicts": [...]} (nightly: and "diagnosis": [...]) on stdout, nothing else',
)


def _json_document(records: list[RunRecord], verdicts: list[EntryVerdict], **extra: object) -> str:
    return json.dumps({"runs": [r.model_dump(mode="json") for r in records],
                       "verdicts": [v.to_json() for v in verdicts], **extra}, indent=2)  # fmt: skip


def _verdict_table(title: str, verdicts: list[EntryVerdict]) -> Table:
    table = Table(title=title, title_justify="left")
    for header in ("entry", "metric", "verdict", "baseline", "candidate", "change", "p", "n", "why"):
        table.add_column(header, no_wrap=header not in ("why", "entry"))
    styles = {"regression": "bold red", "improvement": "green", "insufficient_data": "yellow", "unchanged": ""}
    for v in verdicts:
        c = v.comparison
        table.add_row(
            escape(v.entry), v.metric, f"[{styles[v.verdict]}]{v.verdict}[/]" if styles[v.verdict] else v.verdict,
            _num(c.baseline_median), _num(c.candidate_median),
            "" if c.relative_change is None else f"{c.relative_change:+.1%}",
            "" if c.p_value is None else f"{c.p_value:.2g}", f"{c.n_baseline}/{c.n_candidate}",
            escape("; ".join([c.reason, *v.changes])),
        )  # fmt: skip
    return table


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _exit_status(verdicts: list[EntryVerdict], failed: list[RunRecord], fail_on: str | None) -> int:
    """1 when a launch failed, else 3 when asked to fail on a regression and there is one, else 0."""
    if failed:
        return 1
    if fail_on == "regression" and any(v.verdict == "regression" for v in verdicts):
        return EXIT_REGRESSION
    return 0


def gate_options(alpha: float, min_effect: float) -> Gate:
    """--alpha and --min-effect checked as the suite's [gate] is: 0 < alpha < 1, min_effect >= 0, both finite."""
    try:
        return Gate.model_validate({"alpha": alpha, "min_effect": min_effect})
    except ValidationError as exc:
        problem = exc.errors()[0]
        option = "--alpha" if problem["loc"][0] == "alpha" else "--min-effect"
        raise click.BadParameter(f"{problem['msg']} (got {problem['input']!r})", param_hint=option) from None


@click.command()
@click.argument("suite_path", metavar="SUITE", type=click.Path(path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field of every entry's spec, e.g. --set workload.steps=50 (repeatable)")  # fmt: skip
@launcher_options
@click.option("--timeout", "timeout_s", type=float, default=None, help="wall-clock limit per launch, seconds")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="nightly HTML page to write (default: STORE/_nightly/MACHINE/SUITE/NIGHT/nightly.html)")  # fmt: skip
@click.option("--watch", "watching", is_flag=True,
              help="follow each run live while it runs (as benchbed watch does)")  # fmt: skip
@watch_options
@store_option
@json_option
@fail_on_option
@junit_option
def nightly(suite_path: Path, overrides: tuple[str, ...], launcher: str, launcher_flags: dict[str, Any],
            timeout_s: float | None, output: Path | None, watching: bool, interval: float,
            prometheus_port: int | None, on_alarm: str | None, store_dir: Path, as_json: bool, fail_on: str | None,
            junit_path: Path | None) -> None:  # fmt: skip
    """Run every entry of SUITE (a TOML suite file) its `repeats` times, then gate each watched metric of
    tonight's runs against the last nights of the same (machine, entry) series.

    Prints a Markdown summary (or JSON with --json) and writes the nightly page with each series' history and
    change points. --launcher ray|slurm launches every run on the cluster (--store on a filesystem its nodes
    see). --watch shows each run's live figures while it runs (benchbed watch), its alarms kept in the run's
    record. Exit status: 0 nothing regressed (or --fail-on not given), 1 a launch failed, 2 bad input,
    3 a regression with --fail-on regression."""
    from benchbed.nightly.run import run_night
    from benchbed.report.nightly import counts_line, night_summary, write_night

    suite, planned = load_suite(suite_path, overrides)
    for path in (output, junit_path):  # an unwritable page or JUnit path is refused before the night runs
        if path is not None:
            check_output(path)
    chosen = build_launcher(launcher, launcher_flags)
    follow = _follow([entry.spec for entry in planned], watching, interval, prometheus_port, on_alarm, suite_path,
                     as_json)  # fmt: skip

    def progress(label: str) -> AbstractContextManager[Callable[[str], None]]:
        return launch_progress(label, enabled=sys.stderr.isatty() and follow is None)

    def on_run(label: str, record: RunRecord) -> None:
        if not as_json:
            err_console.print(f"{label}: {record.status}", highlight=False, markup=False)

    night = run_night(suite, planned, Store(store_dir), chosen, timeout_s, progress, on_run, follow)
    for error in night.skipped:
        err_console.print(f"[yellow]warning:[/] skipped {escape(error)}", highlight=False, soft_wrap=True)
    for warning in night.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    page = write_night(night, output, junit_path)
    regimes = [r.to_json() for r in night.regimes]
    click.echo(_json_document(night.records, night.verdicts, diagnosis=regimes) if as_json else night_summary(night))
    err_console.print(f"{counts_line(night.verdicts, night.failed)}\nnightly page: {page.resolve()}",
                      highlight=False, soft_wrap=True)  # fmt: skip
    sys.exit(_exit_status(night.verdicts, night.failed, fail_on))


def _follow(specs: list[ExperimentSpec], watching: bool, interval: float, port: int | None, on_alarm: str | None,
            suite_path: Path, to_stderr: bool) -> Follow | None:  # fmt: skip
    """--watch's follower of each launch (as `benchbed run --watch` follows one), once every entry's adapter is known
    to have a live reader; None without --watch."""
    if not watching:
        if port is not None or on_alarm is not None:
            raise click.UsageError("--prometheus-port and --on-alarm act on the live figures of --watch; add --watch")
        return None
    from benchbed.watch.readers import check_watchable

    for spec in specs:
        check_watchable(spec.adapter, suite_path)

    def follow(spec: ExperimentSpec) -> AbstractContextManager[Following]:
        return following(spec.adapter, spec.spec_id, interval, port, on_alarm, to_stderr, spec.warmup_steps)

    return follow


class _VsCommand(click.Command):
    """Lets `--vs` take several values (`--vs A B C`), as `--vs A --vs B --vs C`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out, following = [], False
        for arg in args:
            if arg == "--vs":
                following = True
                continue
            if arg.startswith("-"):
                following = False
            out += ["--vs", arg] if following else [arg]
        return super().parse_args(ctx, out)


@click.command(cls=_VsCommand)
@click.argument("baseline_dirs", nargs=-1, required=True, type=click.Path(path_type=Path),
                metavar="BASELINE_RUN_DIR...")  # fmt: skip
@click.option("--vs", "candidate_dirs", multiple=True, required=True, type=click.Path(path_type=Path),
              metavar="CANDIDATE_RUN_DIR...", help="candidate run directories (one or more after --vs)")  # fmt: skip
@click.option("--metric", "metrics", multiple=True, help="metric to compare (repeatable; default: headline metrics)")
@click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True, help="significance level")
@click.option("--min-effect", type=float, default=DEFAULT_MIN_EFFECT, show_default=True,
              help="minimum relative change of the median to report")  # fmt: skip
@json_option
@fail_on_option
@junit_option
def compare(baseline_dirs: tuple[Path, ...], candidate_dirs: tuple[Path, ...], metrics: tuple[str, ...],
            alpha: float, min_effect: float, as_json: bool, fail_on: str | None,
            junit_path: Path | None) -> None:  # fmt: skip
    """Compare two sets of stored runs with the nightly gate (exact rank test plus a minimum relative effect).

    Runs are grouped by suite entry (or spec name); the repeats of each set are the samples. Exit status 3 with
    --fail-on regression when any metric regressed."""
    from benchbed.nightly.stats import compare_records
    from benchbed.report.nightly import junit_xml, write_text

    for name in metrics:
        if metric_direction(name) is None:
            raise SpecError(f"--metric {name}: not a metric with a better direction (docs/reference/metrics.md)")
    gate_options(alpha, min_effect)
    if junit_path is not None:
        check_output(junit_path)
    baseline = [read_record(d) for d in baseline_dirs]
    candidate = [read_record(d) for d in candidate_dirs]
    present = {m for r in (*baseline, *candidate) for m in r.metrics}
    names = list(metrics) or default_watch(present)
    verdicts = compare_records(baseline, candidate, names, alpha=alpha, min_effect=min_effect)
    if not verdicts:
        raise SpecError("compare: no entry appears on both sides; pass runs of the same suite entry or spec name")
    if junit_path:
        write_text(junit_path, junit_xml("compare", verdicts))
    if as_json:
        click.echo(_json_document([*baseline, *candidate], verdicts))
    else:
        title = f"{len(baseline)} baseline vs {len(candidate)} candidate runs"
        stdout_console().print(_verdict_table(title, verdicts))
    sys.exit(_exit_status(verdicts, [], fail_on))


@click.command()
@click.argument("night")
@click.option("--reason", required=True, help="why the night cannot be trusted (kept with the mark)")
@click.option("--undo", is_flag=True, help="trust the night again (a later line in the marks log)")
@store_option
def untrust(night: str, reason: str, undo: bool, store_dir: Path) -> None:
    """Mark NIGHT (a night id, as `benchbed history` and the nightly page show it, or `latest` for the store's
    newest night) untrusted: it stops serving as a baseline night and as a point of a reference band, and its
    records stay in the store as they are.

    The mark is a line in STORE/_nightly/untrusted.jsonl; --undo adds a line trusting it again."""
    from benchbed.nightly.history import suite_runs
    from benchbed.nightly.trust import MARKS_PATH, mark_night

    if not store_dir.is_dir():
        raise BenchbedError(f"{store_dir}: no such store; pass the --store that nightly wrote to")
    nights = {str(n) for n in suite_runs(Store(store_dir)).points().column("night").to_pylist() if n}
    if night == "latest" and nights:
        night = max(nights)
    if night not in nights:
        shown = ", ".join(sorted(nights)[-3:]) or "none"
        raise BenchbedError(f"{night}: no night of that id in {store_dir} (the latest: {shown}); "
                            "`benchbed history` lists the series and their nights")  # fmt: skip
    mark = mark_night(store_dir, night, reason, trusted=undo)
    state = "trusted again" if mark.trusted else "untrusted: no baseline and no reference point from now on"
    err_console.print(f"{night}: {state} ({store_dir / MARKS_PATH})", highlight=False)
