"""`benchbed sandbox run|doctor` and `benchbed sandbox-bench` (docs/reference/cli.md); sandbox-bench launches
through the pipeline like `benchbed run`."""

from __future__ import annotations

import asyncio
import json
import math
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from benchbed.cli.console import err_console, stdout_console
from benchbed.errors import BenchbedError
from benchbed.sandbox.base import SandboxSpec
from benchbed.sandbox.events import EventSink, phase_durations
from benchbed.sandbox.pool import PoolConfig, SandboxOutcome, SandboxPool
from benchbed.sandbox.registry import get_backend
from benchbed.secrets import redact
from benchbed.store import DEFAULT_STORE

if TYPE_CHECKING:
    import pandas as pd

    from benchbed import pipeline

TAIL = 4096
BACKEND_HELP = (
    "sandbox backend: local (bubblewrap), modal, prime, or one a package registers in benchbed.sandbox_backends"
)


def _fail(message: str) -> None:
    err_console.print(f"[bold red]benchbed: error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(2)


def _spec(**fields: Any) -> SandboxSpec:
    try:
        return SandboxSpec(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-")
        _fail(f"{flag}: {err['msg']} (got {err.get('input')!r})")
        raise  # unreachable: _fail exits


def _tail(data: bytes) -> str:
    return redact(data[-TAIL:].decode(errors="replace"))


def outcome_json(outcome: SandboxOutcome, backend: str, events: EventSink) -> dict[str, Any]:
    """The one JSON document `sandbox run` prints."""
    res = outcome.result
    reason = outcome.reason or (res.reason if res else None)
    limit = res.limit if res else None
    return {
        "status": "ok" if res is not None and reason is None and limit is None else "failed",
        "backend": backend,
        "sandbox_id": outcome.sandbox_id,
        "exit_code": res.exit_code if res else None,
        "reason": reason,
        "limit": limit,
        "message": redact(outcome.message or (res.message if res else "")),
        "stdout_tail": _tail(res.stdout) if res else "",
        "stderr_tail": _tail(res.stderr) if res else "",
        "truncated": bool(res and res.truncated),
        "durations": phase_durations(events.events, outcome.key),
        "warnings": outcome.warnings,
    }


@click.group("sandbox")
def sandbox() -> None:
    """Run a command in a sandbox, or report what the local sandbox can enforce here."""


@sandbox.command("run", context_settings={"ignore_unknown_options": False})
@click.option("--backend", default="local", show_default=True, metavar="NAME", help=BACKEND_HELP)
@click.option("--timeout", "timeout_s", type=float, default=60.0, show_default=True, help="exec wall-clock limit (s)")
@click.option("--memory-mb", type=int, default=None, help="memory cap (default 512)")
@click.option("--max-files", type=int, default=None, help="inode cap of the working directory (default 50000)")
@click.option("--pids", "pids_max", type=int, default=None, help="process cap (default 256)")
@click.option("--disk-mb", type=int, default=None, help="working directory size (default 256)")
@click.option("--cpu", type=float, default=None, help="CPU cores (default 1)")
@click.option("--output-limit", "output_limit_bytes", type=int, default=None, help="bytes per stream (default 1 MiB)")
@click.option("--start-timeout", "start_timeout_s", type=float, default=60.0, show_default=True,
              help="seconds the sandbox may take to start (create -> ready)")  # fmt: skip
@click.option("--ro-bind", "ro_binds", multiple=True, type=click.Path(exists=True, file_okay=True),
              help="extra host path visible read-only (repeatable)")  # fmt: skip
@click.option("--image", default=None, help="container image (modal, prime)")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def sandbox_run(backend: str, timeout_s: float, start_timeout_s: float, command: tuple[str, ...],
                ro_binds: tuple[str, ...], **limits: Any) -> None:  # fmt: skip
    """Run CMD in a fresh sandbox and print one JSON result: status, exit code, reason, output tails, durations."""
    if timeout_s <= 0 or start_timeout_s <= 0:
        _fail(f"--timeout and --start-timeout must be positive (got {timeout_s:g}, {start_timeout_s:g})")
    if not command or not command[0]:
        _fail("empty command: give the program after `--`, e.g. benchbed sandbox run -- python3 -c 'print(1)'")
    spec = _spec(ro_binds=[str(Path(p).resolve()) for p in ro_binds], **limits)
    argv = list(command)
    try:
        doc = asyncio.run(_run_one(backend, spec, argv, timeout_s, start_timeout_s))
    except BenchbedError as exc:
        _fail(str(exc))
        return
    click.echo(json.dumps(doc, indent=2))
    sys.exit(0 if doc["status"] == "ok" and doc["exit_code"] == 0 else 1)


async def _run_one(backend_name: str, spec: SandboxSpec, argv: list[str], timeout_s: float,
                   start_timeout_s: float) -> dict[str, Any]:  # fmt: skip
    backend = get_backend(backend_name)
    if backend_name == "local":
        from benchbed.sandbox.local import BadCommand, resolve_command

        try:
            resolve_command(argv, spec)
        except BadCommand as exc:
            await backend.shutdown()
            raise BenchbedError(str(exc)) from None
    events = EventSink()
    config = PoolConfig(max_starting=1, start_timeout_s=start_timeout_s, exec_timeout_s=timeout_s, retries=1)
    async with SandboxPool(backend, config, events) as pool:
        outcome = await pool.run(spec, argv, timeout_s=timeout_s)
    return outcome_json(outcome, backend_name, events)


@sandbox.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="print the capabilities as JSON")
def sandbox_doctor(as_json: bool) -> None:
    """Report what the local sandbox enforces on this host, and what it degrades to."""
    from benchbed.sandbox.capabilities import SandboxUnavailable, detect
    from benchbed.sandbox.cgroups import remove_parents

    try:
        caps = detect()
    except SandboxUnavailable as exc:
        _fail(str(exc))
        return
    remove_parents(caps.cgroups)
    rows = caps.rows()
    if as_json:
        click.echo(json.dumps({"capabilities": [dict(zip(("name", "state", "detail"), r, strict=True)) for r in rows],
                               "warnings": caps.warnings}, indent=2))  # fmt: skip
        return
    table = Table(title="local sandbox capabilities", title_justify="left")
    for col in ("capability", "state", "detail"):
        table.add_column(col)
    for name, state, detail in rows:
        table.add_row(name, "[green]ok[/]" if state == "ok" else "[yellow]degraded[/]", detail)
    console = stdout_console()
    console.print(table)
    for warning in caps.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


@click.command("sandbox-bench")
@click.option("--backend", default="local", show_default=True, metavar="NAME", help=BACKEND_HELP)
@click.option("--concurrency", default="1,32,96,256,960", show_default=True,
              help="comma-separated concurrency levels")  # fmt: skip
@click.option("--per-level", type=int, default=None, help="sandboxes per level (default: the level itself)")
@click.option("--max-starting", type=int, default=None, help="admission cap on starting sandboxes (default: none)")
@click.option("--start-timeout", "start_timeout_s", type=float, default=120.0, show_default=True,
              help="seconds a start may take before it fails as start_timeout ([sandbox] start_timeout_s)")  # fmt: skip
@click.option("--program", default=None, help="command run in each sandbox (default: a short python3 program)")
@click.option("--baseline/--no-baseline", default=True, show_default=True,
              help="also time bare fork/exec of the same program at each level")  # fmt: skip
@click.option("--name", default="sandbox-bench", show_default=True, help="spec name (the series the run joins)")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_STORE,
              show_default=True, help="results directory")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="print the RunRecord as JSON on stdout, nothing else")
def sandbox_bench(backend: str, concurrency: str, per_level: int | None, max_starting: int | None,
                  start_timeout_s: float, program: str | None, baseline: bool, name: str, store_dir: Path,
                  as_json: bool) -> None:  # fmt: skip
    """Sweep concurrency levels, store the run (record, trace, metrics) and print a summary per level.

    Shorthand for `benchbed run` of a spec with adapter "sandbox", [sandbox] backend, max_starting and
    start_timeout_s, and a [sandbox_bench] table (levels, baseline, per_level and program when given): the
    same spec written as a file is stored under the same spec id. Exit status 1 if the sweep failed."""
    from benchbed.cli.console import launch_progress
    from benchbed.metrics.series import sandbox_levels
    from benchbed.pipeline import execute
    from benchbed.spec import build_spec
    from benchbed.store import Store

    try:
        levels = [int(x) for x in concurrency.split(",") if x.strip()]
    except ValueError:
        _fail(f"--concurrency {concurrency!r}: expected comma-separated positive integers, e.g. 1,32,96")
        return
    if not levels or any(n <= 0 for n in levels):
        _fail(f"--concurrency {concurrency!r}: expected comma-separated positive integers, e.g. 1,32,96")
    if per_level is not None and per_level <= 0:
        _fail(f"--per-level must be positive (got {per_level})")
    if max_starting is not None and max_starting <= 0:
        _fail(f"--max-starting must be positive (got {max_starting})")
    argv = shlex.split(program) if program else None
    if argv == []:
        _fail("--program is empty; give a command such as '/usr/bin/python3 -c \"print(1)\"'")
    table: dict[str, Any] = {"levels": levels, "baseline": baseline}
    table.update({k: v for k, v in (("per_level", per_level), ("program", argv)) if v is not None})
    sandbox_table: dict[str, Any] = {"backend": backend, "start_timeout_s": start_timeout_s}
    if max_starting is not None:
        sandbox_table["max_starting"] = max_starting
    data = {"name": name, "adapter": "sandbox", "warmup_steps": 0, "sandbox": sandbox_table, "sandbox_bench": table}
    try:
        spec = build_spec(data, "benchbed sandbox-bench")
        with launch_progress(f"sandbox-bench {backend}", enabled=not as_json and sys.stderr.isatty()) as on_line:
            outcome = execute(spec, Store(store_dir), on_line=on_line)
    except BenchbedError as exc:
        _fail(str(exc))
        return
    if as_json:
        click.echo(outcome.record.model_dump_json(indent=2))
    else:
        _print_summary(sandbox_levels(outcome.trace) if outcome.trace is not None else None, outcome)
    if outcome.record.status == "failed":
        sys.exit(1)


def _print_summary(levels: pd.DataFrame | None, outcome: pipeline.RunOutcome) -> None:
    console = stdout_console()
    if levels is not None and len(levels):
        table = Table(title=f"sandbox-bench  {outcome.record.spec_id}", title_justify="left")
        cols = {"level": ("level", 1), "attempts": ("n", 1), "failures": ("init failures", 1),
                "start_p50_s": ("start p50 ms", 1e3), "start_p99_s": ("start p99 ms", 1e3),
                "queue_p50_s": ("queue p50 ms", 1e3), "starts_per_s": ("starts/s", 1),
                "completions_per_s": ("runs/s", 1), "bare_completions_per_s": ("bare runs/s", 1),
                "start_ratio_vs_bare": ("bare/starts", 1), "slowdown_vs_bare": ("bare/runs", 1)}  # fmt: skip
        cols = {k: v for k, v in cols.items() if k in levels.columns}
        for heading, _ in cols.values():
            table.add_column(heading, justify="right")
        for row in levels.to_dict("records"):
            table.add_row(*(_fmt(row[k], scale) for k, (_, scale) in cols.items()))
        console.print(table)
    for warning in outcome.record.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if outcome.record.error:
        console.print(f"[red]{escape(outcome.record.error.message)}[/]", highlight=False)
    console.print(f"stored in {outcome.run_dir}", highlight=False, soft_wrap=True)


def _fmt(value: Any, scale: float = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value * scale:.1f}" if isinstance(value, float) else str(value)
