"""The `benchbed` command (docs/reference/cli.md): one group whose subcommands are imported only when they run.

`benchbed --help` and `--version` import click and nothing heavy (no pandas, DuckDB, pyarrow, pydantic, rich):
each command's module loads what it uses when it is invoked, so start-up stays well under a quarter second."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any

import click

from benchbed import __version__
from benchbed.cli.summaries import summary_of
from benchbed.errors import BenchbedError
from benchbed.launch.signals import signal_name, stop_signals_interrupt
from benchbed.registry import Registry


def _is_command(obj: object) -> bool:
    return isinstance(obj, click.Command)


COMMANDS: Registry[click.Command] = Registry(
    "benchbed.commands", "command", (_is_command, "a click.Command"), BenchbedError
)
"""The subcommands of `benchbed`: benchbed's own, registered here by `module:attribute` (imported on first use),
and any a package adds in the `benchbed.commands` entry-point group."""

OWN_COMMANDS = {  # name -> module:attribute
    "run": "benchbed.cli.runs:run",
    "simulate": "benchbed.cli.runs:simulate",
    "watch": "benchbed.cli.watch:watch",
    "ingest": "benchbed.cli.runs:ingest_command",
    "report": "benchbed.cli.runs:report",
    "ls": "benchbed.cli.ls:ls_command",
    "demo": "benchbed.cli.runs:demo",
    "sandbox": "benchbed.cli.sandbox:sandbox",
    "sandbox-bench": "benchbed.cli.sandbox:sandbox_bench",
    "diagnose": "benchbed.cli.diagnose:diagnose",
    "export": "benchbed.cli.export:export",
    "nightly": "benchbed.cli.nightly:nightly",
    "compare": "benchbed.cli.nightly:compare",
    "history": "benchbed.cli.history:history",
    "untrust": "benchbed.cli.nightly:untrust",
    "reproduce": "benchbed.cli.simtools:reproduce_command",
    "calibrate": "benchbed.cli.simtools:calibrate_command",
    "plan": "benchbed.cli.simtools:plan_command",
}
for _name, _ref in OWN_COMMANDS.items():
    COMMANDS.register(_name, _ref)


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

    Subcommands come from the COMMANDS registry, each imported on first use; the help lists their summaries from
    their own source without importing them."""

    ends_at_once = False  # whether the command that ran says so (an `ends_at_once` attribute set by its module)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS.names(), *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = COMMANDS.load(cmd_name)
            self.ends_at_once = getattr(self.commands[cmd_name], "ends_at_once", False)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, each summary read from its command's source: `benchbed --help` imports no command
        module (one whose source cannot be read is imported for its summary)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            ref = COMMANDS.reference(name) if name not in self.commands else None
            summary = summary_of(ref, limit) if ref is not None else None
            if summary is not None:
                rows.append((name, summary))
                continue
            try:
                command = self.get_command(ctx, name)
            except BenchbedError as exc:  # a plug-in that cannot load is listed with why, not left out
                rows.append((name, str(exc)))
                continue
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
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
