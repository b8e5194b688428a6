"""Shared console helpers: stderr console for progress and errors, launch progress bars."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

err_console = Console(stderr=True)
_PROGRESS = re.compile(r"^progress (\d+)/(\d+)\s*$")


@contextmanager
def launch_progress(description: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A progress bar fed by the child's stderr: `progress N/M` lines advance it, other lines show as status."""
    if not enabled:
        yield lambda line: None
        return
    # plain text: a matrix label `q[sim.concurrency=64]` or a log line with brackets is not rich markup
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
               TextColumn("{task.fields[status]}", markup=False), TimeElapsedColumn())  # fmt: skip
    # not drawn when stderr is not a terminal: there a transient bar only leaves a blank line before the output
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
        task = progress.add_task(description, total=None, status="")

        def on_line(line: str) -> None:
            match = _PROGRESS.match(line)
            if match:
                done, total = int(match.group(1)), int(match.group(2))
                progress.update(task, completed=done, total=total, status=f"step {done}/{total}")
            elif line.strip():
                progress.update(task, status=line.strip()[-60:])

        yield on_line


def stdout_console() -> Console:
    """Console for tables on stdout: the terminal's width, or wide enough not to truncate when piped."""
    return Console(width=None if sys.stdout.isatty() else 200)


@contextmanager
def history_progress(description: str) -> Iterator[Callable[[int, int | None], None]]:
    """A progress bar for a history fetched from a server: called with (done, total) as pages or metrics arrive."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
        task = progress.add_task(description, total=None)
        yield lambda done, total: progress.update(task, completed=done, total=total)


@contextmanager
def read_progress() -> Iterator[None]:
    """A progress bar per long file read (benchbed.progress), in bytes, while the block runs; nothing is drawn
    when stderr is not a terminal, and reads then report nothing at all."""
    from rich.progress import DownloadColumn

    from benchbed.progress import reporting

    if not err_console.is_terminal:
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done, total=total)

        with reporting(update):
            yield
