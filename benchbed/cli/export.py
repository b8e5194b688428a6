"""`benchbed export RUN_DIR --format perfetto|csv|parquet [-o FILE]`: a stored run's trace for other tools."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchbed.cli.console import err_console
from benchbed.export import FORMATS, export_perfetto, export_table
from benchbed.outputs import check_output
from benchbed.trace import read_trace

SUFFIXES = {"perfetto": ".perfetto.json", "csv": ".csv", "parquet": ".parquet"}


@click.command(name="export")
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="perfetto", show_default=True,
              help="perfetto: Chrome Trace Event JSON (open in ui.perfetto.dev or chrome://tracing); "
                   "csv or parquet: the canonical trace itself")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="file to write (default: ./<RUN_DIR name> with .perfetto.json, .csv or .parquet)")  # fmt: skip
def export(run_dir: Path, fmt: str, output: Path | None) -> None:
    """Export the trace of a stored run (or a trace.parquet) as a timeline or a table.

    The Perfetto timeline has one process per role (trainer, generator, sandboxes), one thread per trainer,
    generator slot and sandbox, counters (samples in flight, queue depth, trainer version, sandboxes starting)
    and arrows from each trained rollout to the step that consumed it."""
    name = run_dir.resolve().name if run_dir.is_dir() else run_dir.stem
    output = output or Path(f"{name}{SUFFIXES[fmt]}")
    check_output(output)
    trace = read_trace(run_dir)
    if fmt != "perfetto":
        export_table(trace, output, fmt)
        err_console.print(f"wrote {output} ({len(trace.events):,} events)", highlight=False, soft_wrap=True)
        return
    total = int((trace.events["key"] == "rollout").sum())
    columns = (TextColumn("exporting rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("export", total=total)
        summary = export_perfetto(trace, output, progress=lambda n: progress.advance(task, n))
    counts = ", ".join(f"{n:,} {phase}" for phase, n in summary.events.items())
    note = " (trainer steps reconstructed from per-step durations)" if summary.reconstructed else ""
    err_console.print(f"wrote {output}: {counts}{note}", highlight=False, soft_wrap=True)
