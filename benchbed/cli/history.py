"""`benchbed history`: each (machine, suite entry) series of a store, its change points and last verdicts.

Its own module, importing only what the table needs (no launcher, no metric functions, no pandas), so a year of a
fleet's nightly runs answers in about a second; the page's drawing is imported only for -o."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from benchbed.cli.store_options import store_option
from benchbed.errors import BenchbedError, SpecError
from benchbed.outputs import check_output
from benchbed.store import Store


@click.command()
@store_option
@click.option("--entry", default=None, help="only this suite entry")
@click.option("--metric", default=None, help="only this metric (default: each entry's watched metrics)")
@click.option("--suite", "suite_name", default=None, help="only runs of this suite")
@click.option("--machine", default=None, help="only this machine (default: every machine in the store)")
@click.option(
    "--nights",
    type=click.IntRange(min=1),
    default=None,
    help="previous nights the last night is gated against (default: as its suite's gate recorded)",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the history page (HTML) here")  # fmt: skip
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='print {"series": [...], "untrusted": {night: reason}} on stdout, nothing else',
)
def history(store_dir: Path, entry: str | None, metric: str | None, suite_name: str | None, machine: str | None,
            nights: int | None, output: Path | None, as_json: bool) -> None:  # fmt: skip
    """Show each (machine, suite entry) series of the store: nights, change points, and the last night's verdict."""
    with _collector_paused():
        _history(store_dir, entry, metric, suite_name, machine, nights, output, as_json)


# It only reads and prints: its process ends once its output is flushed, without freeing a year of one series'
# nights object by object (a tenth of a second at exit; BenchbedGroup reads this).
history.ends_at_once = True  # type: ignore[attr-defined]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while history runs: it builds some hundred thousand lists and dicts and
    no cycle, and each collection pass over them cost a tenth of a second in all on a year of one series."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _history(store_dir: Path, entry: str | None, metric: str | None, suite_name: str | None, machine: str | None,
             nights: int | None, output: Path | None, as_json: bool) -> None:  # fmt: skip
    """`history`'s work, its options as the command received them."""
    from benchbed.nightly.history import build_series, is_known_metric, suite_runs
    from benchbed.nightly.trust import untrusted_nights

    if not store_dir.is_dir():
        raise BenchbedError(f"{store_dir}: no such store; pass the --store that nightly wrote to")
    if metric is not None and not is_known_metric(metric):
        raise SpecError(f"--metric {metric}: not a metric this benchbed computes (docs/reference/metrics.md)")
    if output is not None:
        check_output(output)
    runs = suite_runs(Store(store_dir), machine, suite_name, entry, metric)
    warnings: list[str] = []
    untrusted = untrusted_nights(store_dir)
    series = build_series(runs, [metric] if metric else None, nights, warnings, untrusted)
    for warning in warnings:
        _stderr("[yellow]warning:[/] {}", warning)
    if output:
        from benchbed.report.nightly import render_history_html, write_text  # the page's drawing: only for -o

        write_text(output, render_history_html(f"history of {store_dir}", series))
    if as_json:
        out = click.get_binary_stream("stdout")  # the document as orjson wrote it: no 18 MB str decoded and re-encoded
        out.write(_json_bytes({"series": [s.to_json() for s in series], "untrusted": untrusted}) + b"\n")
        out.flush()
    else:
        headers = ("machine", "entry", "metric", "nights", "last median", "change points", "marked changes",
                   "last verdict")  # fmt: skip
        rows = [
            (s.machine, s.entry, s.metric, str(len(s.nights)), f"{s.nights[-1].median:.4g}",
             ", ".join(s.nights[i].night[:15] for i in s.change_points),
             "; ".join(f"{s.nights[i].night[:15]}: {t}" for i, t in s.marked.items()),
             s.verdict.verdict if s.verdict else "")
            for s in series
        ]  # fmt: skip
        click.echo(f"series in {store_dir}\n{aligned_text(headers, rows)}")
        for night, reason in untrusted.items():
            click.echo(f"untrusted (no baseline): {night}: {reason}")
    for error in runs.errors:
        _stderr("[bold red]benchbed: error:[/] {}", error)
    if runs.errors:
        sys.exit(2)


def _json_bytes(document: object) -> bytes:
    """`json.dumps(document, indent=2)` as bytes, written by orjson (a year of one series' nights is some 18 MB, which
    the standard library takes a second to write): non-ASCII escaped as the standard library does, and a value that is
    not a number written null, so that the document is JSON any reader parses. Only the runs of non-ASCII bytes (whole
    UTF-8 characters: none of their bytes is ASCII), found with numpy, are decoded, not the whole document."""
    import numpy as np
    import orjson

    data = orjson.dumps(document, option=orjson.OPT_INDENT_2)
    if data.isascii():
        return data
    high = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) >= 0x80)
    breaks = np.flatnonzero(np.diff(high) > 1)
    starts, ends = high[np.r_[0, breaks + 1]].tolist(), (high[np.r_[breaks, len(high) - 1]] + 1).tolist()
    parts, done = [], 0
    for start, end in zip(starts, ends, strict=True):
        parts += [data[done:start], json.dumps(data[start:end].decode())[1:-1].encode()]
        done = end
    return b"".join([*parts, data[done:]])


def _stderr(markup: str, text: str) -> None:
    """One styled line on stderr; rich is imported only when there is something to say."""
    from rich.markup import escape

    from benchbed.cli.console import err_console

    err_console.print(markup.format(escape(text)), highlight=False, soft_wrap=True)


def aligned_text(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Rows as plain-text columns under a header line, as `benchbed ls` prints its runs: each column as wide as its
    widest cell, two spaces between columns, no trailing blanks (a few hundred rows print in a millisecond, where a
    rich table took a fifth of a second)."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in (headers, *rows))
    return "\n".join(line.rstrip() for line in lines)
