"""`benchbed reproduce`, `benchbed calibrate` and `benchbed plan`: the simulator as a tool for questions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from benchbed.cli.console import err_console, stdout_console
from benchbed.errors import BenchbedError
from benchbed.outputs import check_output, write_output
from benchbed.pipeline import execute
from benchbed.sim.calibrate import calibrate, round_trip
from benchbed.sim.plan import VARIABLES, parse_target, plan
from benchbed.sim.reproduce import CaseRun, Row, reproduce, resolve, simulate_in_process, studies
from benchbed.spec import ExperimentSpec, load_spec
from benchbed.store import DEFAULT_STORE, Store


def _published(value: float | list[float] | str) -> str:
    if isinstance(value, list):
        return f"{value[0]:.3g}-{value[1]:.3g}"
    return value if isinstance(value, str) else f"{value:.4g}"


def rows_table(rows: list[Row]) -> Table:
    table = Table(title="reproducing published results", title_justify="left")
    columns = ("case", "quantity", "published", "reproduced", "tolerance", "within", "kind", "inputs",
               "published accuracy (data, not simulated)")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right" if column in ("published", "reproduced") else "left")
    for row in rows:
        table.add_row(row.case, row.quantity, _published(row.published), f"{row.reproduced:.4g}", row.tolerance,
                      "yes" if row.ok else "[bold red]NO[/]", row.kind, ", ".join(row.inputs),
                      row.published_quality)  # fmt: skip
    return table


def _studies_table() -> Table:
    table = Table(title="studies (benchbed reproduce STUDY or STUDY/CASE)", title_justify="left")
    for column in ("study", "cases", "source"):
        table.add_column(column)
    for study in studies().values():
        table.add_row(study.name, ", ".join(study.cases), study.title)
    return table


@click.command(name="reproduce")
@click.argument("targets", nargs=-1, metavar="[all | STUDY | STUDY/CASE]...")
@click.option("--list", "list_only", is_flag=True, help="list the studies and their cases, simulate nothing")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field of every case spec, e.g. --set workload.steps=20 (repeatable)")  # fmt: skip
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=f"also keep each simulated run in this results directory (e.g. {DEFAULT_STORE})")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="print the rows as one JSON list on stdout, nothing else")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write a page per study: published beside reproduced, with the specs' assumptions")  # fmt: skip
def reproduce_command(targets: tuple[str, ...], list_only: bool, overrides: tuple[str, ...], store_dir: Path | None,
                      as_json: bool, html_path: Path | None) -> None:  # fmt: skip
    """Simulate published studies from their configurations (experiments/reproduce/STUDY/*.toml) and compare each
    reproduced quantity with the published figure. TARGETS: `all` (the default), a study (`--list` names them,
    e.g. `semianalysis`, `verl-fully-async`, `april`), one case (`verl-fully-async/128-gpus`) or a SemiAnalysis
    case by its old id (`case1` ... `case4`). Rows are `prediction` (the published value was not an input),
    `consistency` (it was, directly or through a derived parameter) or `out-of-sample` (a prediction again, with
    the simulator first fitted to the case's synchronous baseline). Exits 1 if a row is out of tolerance, 2 on an
    unknown study or case."""
    if list_only:
        if as_json:
            click.echo(json.dumps({s.name: {"title": s.title, "cases": list(s.cases)} for s in studies().values()}))
        else:
            stdout_console().print(_studies_table())
        return
    targets = targets or ("all",)
    for target in targets:
        try:
            resolve(target)
        except BenchbedError as exc:
            raise click.BadParameter(str(exc), param_hint="TARGETS") from None
    if html_path is not None:
        check_output(html_path)

    def simulate(spec: ExperimentSpec) -> CaseRun:
        if store_dir is None:
            return simulate_in_process(spec)
        outcome = execute(spec, Store(store_dir))
        if outcome.trace is None or outcome.record.status != "succeeded":
            raise BenchbedError(f"{spec.source}: simulation failed; see {outcome.run_dir}")
        values = {k: v.value for k, v in outcome.record.metrics.items()}
        return CaseRun(spec, outcome.trace, values, outcome.run_dir)

    with err_console.status("simulating") as status:
        rows = reproduce(list(targets), simulate, overrides, progress=lambda text: status.update(f"simulating {text}"))
    if html_path is not None:
        from benchbed.report.reproduce_page import reproduce_html

        write_output(html_path, reproduce_html(rows))
    if as_json:
        click.echo(json.dumps([row.as_json() for row in rows], indent=2))
    else:
        stdout_console().print(rows_table(rows))
    if not all(row.ok for row in rows):
        sys.exit(1)


@click.command(name="calibrate")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), metavar="RUN_DIR")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the calibrated spec here (default: print it on stdout)")  # fmt: skip
@click.option("--warmup-steps", type=int, default=None, help="steps left out of the fit (default: the record's)")
def calibrate_command(run_dir: Path, output: Path | None, warmup_steps: int | None) -> None:
    """Fit a simulator spec to the stored run in RUN_DIR (any adapter's trace.parquet): rollout latency,
    batch and group size, trainer compute and weight sync, concurrency, pass rates, mode and staleness bound.
    Every parameter's comment says where it came from; what the trace lacked is listed on stderr with what was
    assumed, and the round trip of every headline metric (the run's beside the calibrated spec's, simulated)
    is printed there, with a warning for each one off by more than 10% (or 0.02)."""
    if output is not None:
        check_output(output)
    cal = calibrate(run_dir, warmup_steps)
    text = cal.to_toml()
    if output is None:
        click.echo(text, nl=False)
    else:
        write_output(output, text)
        err_console.print(f"calibrated spec: {output}", highlight=False)
    for line in cal.missing:
        err_console.print(f"[yellow]missing or fitted:[/] {line}", highlight=False, soft_wrap=True)
    for row in round_trip(cal):
        warn = "" if row.ok else "[yellow]warning:[/] "
        err_console.print(f"{warn}{row.line()}", highlight=False, soft_wrap=True)


def _range(text: str | None) -> tuple[int | None, int | None]:
    if text is None:
        return None, None
    try:
        lo, hi = (int(part) for part in text.split(":"))
    except ValueError:
        raise BenchbedError(f"--range {text!r}: expected LO:HI, two integers, e.g. 16:1024") from None
    return lo, hi


@click.command(name="plan")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("--target", "target_text", required=True, metavar="'METRIC<=X'",
              help="what must hold, e.g. 'trainer_idle_ratio<=0.1' (also >=, <, >)")  # fmt: skip
@click.option("--vary", type=click.Choice(VARIABLES), required=True, help="the field to size")
@click.option("--range", "range_text", default=None, metavar="LO:HI",
              help="values to search (default: group size to 4x the larger of the spec's value and the closed form "
                   "for concurrency; 0 to 64 for the staleness bound)")  # fmt: skip
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="override a spec field (repeatable)")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="HTML page with the curve (default: results/plans/<spec>-<field>.html)")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="print the answer as one JSON object on stdout, nothing else")
def plan_command(spec_path: Path, target_text: str, vary: str, range_text: str | None, overrides: tuple[str, ...],
                 output: Path | None, as_json: bool) -> None:  # fmt: skip
    """The smallest (or largest, as the target requires) value of --vary that meets --target, found by
    simulating SPEC (a sweep, then bisection), beside the closed-form estimate (generation-bound 1 - rate ratio,
    the staleness-budget cap, or the synchronous straggler maximum). Writes the curve as an HTML plot."""
    spec = load_spec(spec_path, overrides)
    target = parse_target(target_text)
    lo, hi = _range(range_text)
    output = output or Path("results") / "plans" / f"{spec.name}-{vary.split('.')[-1]}.html"
    check_output(output)
    with err_console.status("simulating") as status:
        result = plan(spec, target, vary, lo, hi, progress=lambda text: status.update(f"simulating {text}"))
    from benchbed.report.plan_page import plan_html  # matplotlib: loaded only when a page is drawn

    write_output(output, plan_html(result))
    if as_json:
        click.echo(json.dumps({**result.as_json(), "plot": str(output)}, indent=2))
    else:
        console = stdout_console()
        answer = "none" if result.answer is None else str(result.answer)
        metric = "n/a" if result.answer_metric is None else f"{result.answer_metric:.4g}"
        estimate = "n/a" if result.closed_form is None else f"{result.closed_form:.4g}"
        console.print(f"{vary} for {target}: simulated {answer} ({result.note}; {target.metric} = {metric} there)",
                      highlight=False, soft_wrap=True)  # fmt: skip
        console.print(f"closed form: {estimate}  [{result.closed_form_formula}]", highlight=False, soft_wrap=True)
        console.print(f"plot: {output.resolve()}", highlight=False, soft_wrap=True)
    if result.answer is None:
        sys.exit(1)


COMMANDS = (reproduce_command, calibrate_command, plan_command)
