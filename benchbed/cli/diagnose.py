"""`benchbed diagnose RUN_DIR... [--json]`: name each run's bottleneck, its evidence and levers, and predict the main
lever's effect from a simulation calibrated to the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from benchbed.cli.console import launch_progress, stdout_console

if TYPE_CHECKING:
    from benchbed.diagnosis import Diagnosis


def diagnosis_panel(diagnosis: Diagnosis, title: str) -> Panel:
    """A diagnosis as a rich panel: the headline, the evidence table and the levers."""
    parts: list[object] = [f"[bold]{escape(diagnosis.headline())}[/]"]
    if diagnosis.evidence:
        table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
        for column in ("metric", "value", "threshold", "why"):
            table.add_column(column, justify="right" if column in ("value", "threshold") else "left")
        for e in diagnosis.evidence:
            side = "≥" if e.direction == "above" else "<"
            table.add_row(e.metric, f"{e.value:.3g}", f"{side} {e.threshold:g}", escape(e.why))
        parts.append(table)
    for lever in diagnosis.levers:
        arrow = {"increase": "↑", "decrease": "↓", "enable": "= true", "set": f"= {lever.to}"}[lever.direction]
        parts.append(f"lever: [cyan]{escape(lever.field)}[/] {escape(arrow)}  {escape(lever.why)}")
    return Panel(Group(*parts), title=escape(title), title_align="left", expand=False)


@click.command(name="diagnose")
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="print the diagnoses as JSON on stdout and nothing else")
@click.option("--predict/--no-predict", default=True, show_default=True,
              help="predict the main lever's effect with the planner on a simulation calibrated to the run "
                   "(the run's own spec for a simulation); takes seconds per run")  # fmt: skip
def diagnose(run_dirs: tuple[Path, ...], as_json: bool, predict: bool) -> None:
    """Name each stored run's bottleneck from its metrics: one regime (generation_bound, admission_bound,
    trainer_bound, straggler_bound, long_tail_bound, sandbox_bound, sandbox_start_bound, weight_sync_bound,
    balanced; unknown when the trace cannot tell), flags for waste, the metrics and thresholds that decided it, and
    the spec fields to change, with the predicted effect of the main one. The rules are documented in
    docs/reference/diagnosis.md."""
    from benchbed.diagnosis import diagnose_record
    from benchbed.store import read_record

    results = []
    for run_dir in run_dirs:
        record = read_record(run_dir)
        with launch_progress(f"diagnosing {record.spec_id}", enabled=predict) as on_line:
            diagnosis = diagnose_record(record, run_dir, predict=predict, progress=on_line)
        results.append((run_dir, record, diagnosis))
    if as_json:
        docs = [{"run_dir": str(run_dir), **d.as_json()} for run_dir, _, d in results]
        click.echo(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))
        return
    console = stdout_console()
    for run_dir, record, diagnosis in results:
        console.print(diagnosis_panel(diagnosis, f"{record.spec_id} [{record.status}]  {run_dir}"))
