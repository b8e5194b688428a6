"""The `benchbed` command (docs/reference/cli.md): one group whose subcommands are imported only when they run.

`benchbed --help` and `--version` import click and nothing heavy (no pandas, DuckDB, pyarrow, pydantic, rich):
each command's module loads what it uses when it is invoked, so start-up stays well under a quarter second."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
from typing import Any, NamedTuple

import click

from benchbed import __version__
from benchbed.errors import BenchbedError
from benchbed.launch.signals import signal_name, stop_signals_interrupt


class Lazy(NamedTuple):
    """Where a subcommand lives ("module:attribute") and the one-line summary `benchbed --help` lists for it
    (the first paragraph of its docstring; a unit test keeps the two equal). `ends_at_once`: a command that only
    reads and prints, whose process ends when its output is flushed, without freeing its objects one by one."""

    target: str
    summary: str
    ends_at_once: bool = False


COMMANDS: dict[str, Lazy] = {
    "run": Lazy(
        "benchbed.cli.runs:run",
        "Launch SPEC (a TOML experiment) with its adapter, then parse, measure and store the run.",
    ),
    "simulate": Lazy(
        "benchbed.cli.runs:simulate",
        'Run SPEC through the discrete-event simulator (adapter "sim"), whatever adapter it names.',
    ),
    "watch": Lazy(
        "benchbed.cli.watch:watch",
        "Follow a running run's files and redraw its live figures after each step, until the run ends.",
    ),
    "ingest": Lazy(
        "benchbed.cli.runs:ingest_command",
        "Read an existing run, or a tracker's history of one, into the store and measure it.",
    ),
    "report": Lazy(
        "benchbed.cli.runs:report",
        "Write a self-contained HTML report of one or more stored runs and print a Markdown summary.",
    ),
    "ls": Lazy(
        "benchbed.cli.ls:ls_command",
        "List stored runs (newest last) with their headline metrics.",
    ),
    "demo": Lazy(
        "benchbed.cli.runs:demo",
        "Simulate the embedded quickstart experiment, store it, write its report and print where it is.",
    ),
    "sandbox": Lazy(
        "benchbed.cli.sandbox:sandbox",
        "Run a command in a sandbox, or report what the local sandbox can enforce here.",
    ),
    "sandbox-bench": Lazy(
        "benchbed.cli.sandbox:sandbox_bench",
        "Sweep concurrency levels, store the run (record, trace, metrics) and print a summary per level.",
    ),
    "diagnose": Lazy(
        "benchbed.cli.diagnose:diagnose",
        "Name each stored run's bottleneck from its metrics: one regime (generation_bound, admission_bound, "
        "trainer_bound, straggler_bound, sandbox_bound, balanced; unknown when the trace cannot tell), flags for "
        "waste, the metrics and thresholds that decided it, and the spec fields to change, with the predicted effect "
        "of the main one.",
    ),
    "export": Lazy(
        "benchbed.cli.export:export",
        "Export the trace of a stored run (or a trace.parquet) as a timeline or a table.",
    ),
    "nightly": Lazy(
        "benchbed.cli.nightly:nightly",
        "Run every entry of SUITE (a TOML suite file) its `repeats` times, then gate each watched metric of "
        "tonight's runs against the last nights of the same (machine, entry) series.",
    ),
    "compare": Lazy(
        "benchbed.cli.nightly:compare",
        "Compare two sets of stored runs with the nightly gate (exact rank test plus a minimum relative effect).",
    ),
    "history": Lazy(
        "benchbed.cli.history:history",
        "Show each (machine, suite entry) series of the store: nights, change points, and the last night's verdict.",
        ends_at_once=True,  # a year of one series' nights took a tenth of a second to free at exit
    ),
    "untrust": Lazy(
        "benchbed.cli.nightly:untrust",
        "Mark NIGHT (a night id, as `benchbed history` and the nightly page show it, or `latest` for the store's "
        "newest night) untrusted: it stops serving "
        "as a baseline night and as a point of a reference band, and its records stay in the store as they are.",
    ),
    "reproduce": Lazy(
        "benchbed.cli.simtools:reproduce_command",
        "Simulate published studies from their configurations (experiments/reproduce/STUDY/*.toml) and compare "
        "each reproduced quantity with the published figure.",
    ),
    "calibrate": Lazy(
        "benchbed.cli.simtools:calibrate_command",
        "Fit a simulator spec to the stored run in RUN_DIR (any adapter's trace.parquet): rollout latency, "
        "batch and group size, trainer compute and weight sync, concurrency, pass rates, mode and staleness "
        "bound.",
    ),
    "plan": Lazy(
        "benchbed.cli.simtools:plan_command",
        "The smallest (or largest, as the target requires) value of --vary that meets --target, found by "
        "simulating SPEC (a sweep, then bisection), beside the closed-form estimate (generation-bound 1 - "
        "rate ratio, the staleness-budget cap, or the synchronous straggler maximum).",
    ),
}


def _fail(message: str, status: int = 2) -> None:
    """The error contract: ONE line `benchbed: error: FILE: what was expected` on stderr, then exit."""
    from rich.markup import escape

    from benchbed.cli.console import err_console

    line = " ".join(message.split())
    err_console.print(f"[bold red]benchbed: error:[/] {escape(line)}", highlight=False, soft_wrap=True)
    sys.exit(status)


def _leave(status: int) -> None:
    """After a failure, stop the helper processes still running under benchbed (what it launched is stopped
    before this); with a non-daemon thread still alive, end the process now rather than wait for it."""
    if status != 0:
        import psutil

        children = psutil.Process().children(recursive=True)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.terminate()
        for child in psutil.wait_procs(children, timeout=3)[1]:
            with contextlib.suppress(psutil.Error):
                child.kill()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


class BenchbedGroup(click.Group):
    """Every failure as one line on stderr: BenchbedError and usage errors exit 2, an unreadable file exits 2,
    a stop signal (Ctrl-C, SIGTERM, SIGHUP) exits 128 + its number once what it launched is stopped.

    Subcommands named in COMMANDS are imported on first use; the help lists their summaries without importing."""

    ends_at_once = False  # the command that ran is marked so in COMMANDS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].target.partition(":")
            self.commands[cmd_name] = getattr(importlib.import_module(module), attribute)
            self.ends_at_once = COMMANDS[cmd_name].ends_at_once
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the summaries in COMMANDS: `benchbed --help` imports no command module."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS and name not in self.commands:
                rows.append((name, click.utils.make_default_short_help(COMMANDS[name].summary, limit)))
            elif not self.commands[name].hidden:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The command as a process: it ends when its status is set, whatever a tracker's client left running (a
        non-daemon thread or a helper process waiting on a server that never answers)."""
        try:
            return self.main(*args, **kwargs)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            _leave(status)
            if self.ends_at_once:
                with contextlib.suppress(OSError):  # a reader that closed the pipe early: nothing left to say
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(status)
            raise

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            status = super().main(*args, **kwargs)
        except click.exceptions.Abort:
            _fail("aborted", 130)
        except click.exceptions.NoArgsIsHelpError as exc:  # `benchbed` alone: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            where = exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx else "benchbed"
            hint = f" (see {where} --help)" if isinstance(exc, click.UsageError) else ""
            _fail(f"{where}: {exc.format_message()}{hint}", exc.exit_code)
        sys.exit(status if isinstance(status, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with stop_signals_interrupt():
                return super().invoke(ctx)
        except BenchbedError as exc:
            _fail(str(exc))
        except KeyboardInterrupt as exc:
            name = signal_name(exc)
            _fail(f"interrupted by {name}; what benchbed launched was stopped", 128 + signal.Signals[name].value)
        except OSError as exc:  # a file benchbed had to read or write and could not
            _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))


@click.group(cls=BenchbedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, package_name="benchbed")
def cli() -> None:
    """benchbed: measure RL post-training systems (verl, slime, prime-rl, simulated) with one trace and one set
    of metrics: trainer idle time, staleness, sandbox start-up, zero-advantage waste, throughput."""
