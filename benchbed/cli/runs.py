"""`benchbed run`, `simulate`, `ingest`, `report` and `demo`: launching, ingesting and reporting runs
(docs/reference/cli.md).

Loaded only when one of these commands runs (see benchbed.cli.main), so `benchbed --help` stays fast."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchbed.adapter import available_adapters
from benchbed.cli.console import err_console, history_progress, launch_progress, read_progress, stdout_console
from benchbed.cli.cost_options import resources_options, resources_table
from benchbed.cli.launch_options import build_launcher, launcher_options
from benchbed.cli.store_options import store_option
from benchbed.cli.watch import following, watch_options
from benchbed.errors import BenchbedError
from benchbed.launch.base import Launcher
from benchbed.metrics.registry import headline_metrics
from benchbed.pipeline import (
    RunOutcome,
    check_readable_input,
    execute,
    find_runs,
    ingest,
    ingest_history,
    preflight,
    refuse_summary,
    render,
)
from benchbed.quality import Target, TargetError
from benchbed.record import RunRecord, benchbed_info, machine_info
from benchbed.secrets import redact, redact_env
from benchbed.shell import comment, exports, heredoc
from benchbed.spec import ExperimentSpec, build_spec, expand, load_spec, repeated
from benchbed.store import Store

json_option = click.option(
    "--json", "as_json", is_flag=True, help="print the RunRecord as JSON on stdout, nothing else"
)


def _print_record_json(records: list[RunRecord]) -> None:
    docs = [r.model_dump(mode="json") for r in records]
    click.echo(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))


def _metric_table(record: RunRecord, names: tuple[str, ...] | None = None) -> Table:
    table = Table(title=f"{record.spec_id}  [{record.status}]", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("source")
    for name, metric in record.metrics.items():
        if names is None or name in names:
            table.add_row(name, f"{metric.value:.4g}", metric.unit, metric.source)
    return table


def _summarize(outcome: RunOutcome, console: Console) -> None:
    from benchbed.cli.diagnose import diagnosis_panel
    from benchbed.diagnosis import diagnose_record

    record = outcome.record
    console.print(_metric_table(record, headline_metrics()))
    if record.metrics:
        console.print(diagnosis_panel(diagnose_record(record), "diagnosis (benchbed diagnose RUN_DIR predicts levers)"))
    for warning in record.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if record.error:  # why the run failed goes to stderr, beside the summary on stdout
        if record.error.log_tail:
            err_console.print(record.error.log_tail[-1500:], highlight=False, markup=False)
        err_console.print(f"[red]{escape(record.error.message)}[/]", highlight=False, soft_wrap=True)
    console.print(f"run directory: {outcome.run_dir}", highlight=False, soft_wrap=True)


def _run_specs(specs: list[ExperimentSpec], store: Store, as_json: bool, timeout_s: float | None,
               launcher: str | Launcher = "local",
               watch: dict[str, Any] | None = None) -> list[RunOutcome]:  # fmt: skip
    """Launch each run in turn; with `watch` (interval, port), follow each one live (benchbed.cli.watch)."""
    outcomes = []
    for spec in (one for each in specs for one in repeated(each)):
        label = f"{spec.adapter}: {spec.name}" + (f" {spec.variant}" if spec.variant else "")
        label += f" (repeat {spec.repeat + 1}/{spec.repeats})" if spec.repeats > 1 else ""
        with contextlib.ExitStack() as stack:
            on_line = stack.enter_context(launch_progress(label, enabled=sys.stderr.isatty() and watch is None))
            watcher = None
            if watch is not None:
                watcher = stack.enter_context(following(spec.adapter, spec.spec_id, to_stderr=as_json,
                                                        warmup_steps=spec.warmup_steps, **watch))  # fmt: skip
            outcome = execute(spec, store, on_line=on_line, timeout_s=timeout_s, launcher=launcher,
                              on_run_dir=watcher.start if watcher else None)  # fmt: skip
        if watcher is not None and watcher.warnings():  # the alarms that fired go into the record's warnings
            outcome.record.warnings.extend(watcher.warnings())
            store.save(outcome.run_dir, outcome.record)
        if not as_json:
            _summarize(outcome, stdout_console())
        outcomes.append(outcome)
    return outcomes


def _load_specs(spec_path: Path, overrides: tuple[str, ...], adapter: str | None = None) -> list[ExperimentSpec]:
    extra = (*overrides, f'adapter="{adapter}"') if adapter else overrides
    return expand(load_spec(spec_path, extra), str(spec_path))


def _dry_run(specs: list[ExperimentSpec], store: Store, launcher: Launcher) -> None:
    for spec in specs:
        run_dir = store.propose_run_dir(machine_info().name, spec.adapter, spec.spec_id, benchbed_info().commit)
        _, plan = render(spec, run_dir)
        lines = [comment(f"{spec.spec_id}" + (f"  {spec.variant}" if spec.variant else ""))]
        lines += exports(redact_env(plan.env))
        lines += [comment(f"file {rel}:") + "\n" + heredoc(run_dir / rel, text) for rel, text in plan.files.items()]
        lines.append(f"cd {shlex.quote(str(plan.cwd or run_dir))}")
        lines += [f"{shlex.join(argv)} > {shlex.quote(str(run_dir / rel))}" for rel, argv in plan.captures.items()]
        lines.append(shlex.join(plan.argv))
        lines += launcher.describe(spec, plan, run_dir)
        click.echo(redact("\n".join(lines)))  # secret values masked wherever they appear


def _exit_for(outcomes: list[RunOutcome]) -> None:
    """Exit 1 when a launch failed: its record is `failed`, or `partial` with the launch's error
    (docs/reference/cli.md)."""
    if any(o.record.status == "failed" or (o.record.status == "partial" and o.record.error) for o in outcomes):
        sys.exit(1)


def _watch_settings(specs: list[ExperimentSpec], watching: bool, interval: float, port: int | None,
                    on_alarm: str | None, spec_path: Path) -> dict[str, Any] | None:  # fmt: skip
    """--watch's settings, once every spec's adapter is known to have a live reader; None without --watch."""
    if not watching:
        if port is not None or on_alarm is not None:
            raise click.UsageError("--prometheus-port and --on-alarm act on the live figures of --watch; add --watch")
        return None
    from benchbed.watch.readers import check_watchable

    for spec in specs:
        check_watchable(spec.adapter, spec_path)
    return {"interval": interval, "port": port, "on_alarm": on_alarm}


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a spec field, e.g. --set workload.group_size=8 (repeatable)")  # fmt: skip
@launcher_options
@click.option("--timeout", "timeout_s", type=float, default=None, help="wall-clock limit per launch, seconds")
@click.option("--dry-run", is_flag=True, help="print the exact command, environment and files; launch nothing")
@click.option("--watch", "watching", is_flag=True,
              help="follow each run live while it runs (as benchbed watch does), then print its figures")  # fmt: skip
@watch_options
@store_option
@json_option
def run(spec_path: Path, overrides: tuple[str, ...], launcher: str, launcher_flags: dict[str, Any],
        timeout_s: float | None, dry_run: bool, watching: bool, interval: float, prometheus_port: int | None,
        on_alarm: str | None, store_dir: Path, as_json: bool) -> None:  # fmt: skip
    """Launch SPEC (a TOML experiment) with its adapter, then parse, measure and store the run.

    A spec with a [matrix] table launches one run per combination, each `repeats` times (the simulator's seed
    is sim.seed + the repeat index). --launcher ray submits each run as a Ray job, --launcher slurm as an sbatch
    job ([slurm] table); both need --store on a filesystem the job's nodes see. --watch shows each run's live
    figures while it runs (benchbed watch; adapter ref). Exit status 1 if any run failed."""
    specs = _load_specs(spec_path, overrides)
    store = Store(store_dir)
    chosen = build_launcher(launcher, launcher_flags)
    if dry_run:
        _dry_run(specs, store, chosen)
        return
    preflight(specs, store, chosen)  # every matrix point is valid, and launchable, before the first launches
    watch = _watch_settings(specs, watching, interval, prometheus_port, on_alarm, spec_path)
    outcomes = _run_specs(specs, store, as_json, timeout_s, chosen, watch)
    if as_json:
        _print_record_json([o.record for o in outcomes])
    _exit_for(outcomes)


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a spec field, e.g. --set sim.concurrency=512 (repeatable)")  # fmt: skip
@store_option
@json_option
def simulate(spec_path: Path, overrides: tuple[str, ...], store_dir: Path, as_json: bool) -> None:
    """Run SPEC through the discrete-event simulator (adapter "sim"), whatever adapter it names.

    The spec's [workload] and [sim] tables shape the simulated generator and trainer."""
    specs = _load_specs(spec_path, overrides, adapter="sim")
    store = Store(store_dir)
    preflight(specs, store)
    outcomes = _run_specs(specs, store, as_json, None)
    if as_json:
        _print_record_json([o.record for o in outcomes])
    _exit_for(outcomes)


@click.command(
    name="ingest", short_help="Read an existing run, or a tracker's history of one, into the store and measure it."
)
@click.argument("location", metavar="PATH_OR_URI")
@click.option("--adapter", "adapter_name", default=None,
              help=f"framework that wrote the run (one of: {', '.join(available_adapters())}); may be left out for a "
                   "tracker history that exactly one adapter's key map recognises, or a console log that exactly one "
                   "adapter's console format recognises")  # fmt: skip
@click.option("--warmup-steps", type=int, default=1, show_default=True, help="steps left out of the metric window")
@click.option("--all", "each", is_flag=True, help="PATH holds several runs: ingest each of them")
@click.option("--target", "quality_target", default=None, metavar="NAME>=VALUE",
              help="a quality target for the learning metrics (time, steps and GPU-hours to it): 'reward>=0.5', "
                   "'eval/<validation score>>=0.3' or a trace key; '<=' for a score that falls")  # fmt: skip
@resources_options
@store_option
@json_option
def ingest_command(location: str, adapter_name: str | None, warmup_steps: int, each: bool,
                   quality_target: str | None, store_dir: Path, as_json: bool, **resources: Any) -> None:  # fmt: skip
    """Read an existing run into the store and measure it: a run directory or a log/metrics file, or a tracker's
    history of the run: a W&B run (`wandb/offline-run-*`, `wandb/run-*`, a `run-*.wandb` file, or
    `wandb://ENTITY/PROJECT/RUN_ID`), an MLflow run (`mlruns/`, `sqlite:///mlflow.db`, a `.db` file, or a tracking
    server: `http://HOST:PORT/#/experiments/E/runs/RUN_ID`, `mlflow://HOST:PORT/RUN_ID`; `#RUN_ID` picks a run),
    or TensorBoard event files.

    A directory holding several runs of the adapter is refused with the list of them (exit status 2), unless
    --all is given, which ingests each one. A log of a run that died before its first step (a traceback) is kept
    as a `failed` record with the error it died on (exit status 1).
    GPU counts and a price per GPU-hour give the run the cost metrics; --target gives it the learning metrics."""
    from benchbed.adapterkit.histories import history_kind
    from benchbed.adapterkit.histories.console_formats import console_adapter
    from benchbed.adapterkit.histories.locate import TRACKERS
    from benchbed.adapterkit.histories.reader import HISTORY_SOURCES

    table = resources_table(**resources)
    if quality_target is not None:
        try:
            quality_target = str(Target.parse(quality_target))
        except TargetError as exc:  # before anything is read: exit 2, as for any unusable option
            raise click.BadParameter(str(exc), param_hint="--target") from None
    if "://" not in location and Path(location).exists():
        check_readable_input(Path(location))  # an unreadable file or folder is named as such before any reader
        refuse_summary(Path(location), whole=True)  # before any reader: a summary is no history and no run
    kind = history_kind(location)
    if kind in TRACKERS or kind in HISTORY_SOURCES:  # a registered source is a tracker's
        with history_progress(f"reading {kind} history") as progress:
            outcome = ingest_history(
                location, adapter_name, Store(store_dir), warmup_steps, table, progress, quality_target=quality_target
            )
        outcomes, errors = [outcome], []
    else:
        if adapter_name is None:
            if "://" not in location and not Path(location).exists():
                raise click.UsageError(f"{location}: no such file or directory")
            if not Path(location).is_file():
                raise click.UsageError(
                    f"{location}: not a tracker history; name the framework that wrote it with --adapter"
                )
            adapter_name = console_adapter(Path(location), available_adapters())  # a framework's own console log
        path = Path(location)
        runs = find_runs(path, adapter_name) if each else [path]
        outcomes, errors = [], []
        for run in runs:
            try:
                with read_progress():  # a bar per long file read, on a terminal
                    outcomes.append(ingest(run, adapter_name, Store(store_dir), warmup_steps=warmup_steps,
                                           resources=table, quality_target=quality_target))  # fmt: skip
            except BenchbedError as exc:
                if not each:
                    raise
                errors.append(str(exc))
    if as_json:
        _print_record_json([o.record for o in outcomes])
    else:
        for outcome in outcomes:
            _summarize(outcome, stdout_console())
    for error in errors:
        err_console.print(f"[bold red]benchbed: error:[/] {escape(error)}", highlight=False, soft_wrap=True)
    if errors:
        sys.exit(2)
    _exit_for(outcomes)  # a log of a run that died before its first step is kept as a failed record: exit 1


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="RUN_DIR...")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML file to write (default: RUN_DIR/report.html for one run, else ./report.html)")  # fmt: skip
def report(run_dirs: tuple[Path, ...], output: Path | None) -> None:
    """Write a self-contained HTML report of one or more stored runs and print a Markdown summary."""
    from benchbed.report import write_report
    from benchbed.report.runs import load_run

    runs = [load_run(d) for d in run_dirs]
    output = output or (run_dirs[0] / "report.html" if len(run_dirs) == 1 else Path("report.html"))
    click.echo(write_report(runs, output))
    err_console.print(f"report: {output}", highlight=False)


@click.command()
@click.option(
    "--real",
    is_flag=True,
    help="run a short real GRPO run of the CPU reference engine (adapter ref) and compare it with its "
    "calibrated simulation, instead of the simulated quickstart",
)
@store_option
def demo(real: bool, store_dir: Path) -> None:
    """Simulate the embedded quickstart experiment, store it, write its report and print where it is.

    With --real, run the reference engine for 10 steps (about a minute on 2 cores), calibrate the simulator to that
    run, simulate the calibrated spec, and write one report comparing the real run with its simulated twin."""
    from benchbed.report import write_report

    source = resources.files("benchbed") / "data" / ("ref-demo.toml" if real else "quickstart.toml")
    with resources.as_file(source) as spec_path:
        spec = load_spec(spec_path)
    store = Store(store_dir)
    verb = "running" if real else "simulating"
    with launch_progress(f"{verb} {spec.name} ({spec.workload.steps} steps)") as on_line:
        outcome = execute(spec, store, on_line=on_line)
    if outcome.trace is None:
        _summarize(outcome, stdout_console())
        sys.exit(1)
    runs = [(outcome.record, outcome.trace)]
    if real:
        twin = _calibrated_twin(outcome, store)
        if twin.trace is not None:
            runs.append((twin.record, twin.trace))
    html = outcome.run_dir / "report.html"
    write_report(runs, html)
    console = stdout_console()
    from benchbed.cli.diagnose import diagnosis_panel
    from benchbed.diagnosis import diagnose_record

    for record, _ in runs:
        console.print(_metric_table(record, headline_metrics()))
        console.print(diagnosis_panel(diagnose_record(record), f"diagnosis of {record.spec_id}"))
    console.print(f"report: {html.resolve()}", highlight=False, soft_wrap=True)


def _calibrated_twin(outcome: RunOutcome, store: Store) -> RunOutcome:
    """Calibrate the simulator to a real run and simulate it, so the demo's report compares the two."""
    from benchbed.sim.calibrate import calibrate, round_trip

    calibration = calibrate(outcome.run_dir)
    for row in round_trip(calibration):  # a figure the twin does not reproduce is said, not left to the reader
        if not row.ok:
            err_console.print(f"[yellow]warning:[/] {row.line()}", highlight=False, soft_wrap=True)
    spec = build_spec(calibration.spec_data(), f"calibrated from {outcome.run_dir}")
    with launch_progress(f"simulating its calibrated twin {spec.name}") as on_line:
        return execute(spec, store, on_line=on_line)
