"""`benchbed ls`: the stored runs from the store's catalog, one aligned line each (newest last).

Its own module, so listing loads the catalog's libraries (pyarrow, DuckDB) and not what launching runs needs; the
text is built column-wise in Arrow, so 100,000 runs print in a fraction of a second."""

from __future__ import annotations

from pathlib import Path

import click
import pyarrow as pa
import pyarrow.compute as pc

from benchbed.cli.store_options import store_option
from benchbed.metrics.registry import listed_columns
from benchbed.store import Store

_LS_COLUMNS = {
    "run_id": "run", "started_at": "started (UTC)", "status": "status", "adapter": "adapter", "mode": "mode",
    "spec_id": "spec",
}  # fmt: skip


@click.command(name="ls")
@click.option("--where", default=None, help="DuckDB SQL filter, e.g. \"adapter = 'sim' AND status = 'succeeded'\"")
@store_option
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
def ls_command(where: str | None, store_dir: Path, as_json: bool) -> None:
    """List stored runs (newest last) with their headline metrics."""
    runs, errors = Store(store_dir).query(where=where)
    if as_json:
        click.echo(runs.to_pandas().to_json(orient="records", indent=2))
    else:
        click.echo(f"runs in {store_dir}\n{ls_text(runs)}")
    if errors:  # one unreadable record never hides the others
        from rich.markup import escape

        from benchbed.cli.console import err_console

        for error in errors:
            err_console.print(f"[yellow]benchbed: warning:[/] skipped {escape(error)}", highlight=False, soft_wrap=True)


def ls_text(runs: pa.Table) -> str:
    """The runs as aligned plain-text columns under a header line: times to the minute, metrics to 4 significant
    digits (DuckDB's printf, as Python's `.4g`), a missing value blank; each column padded in Arrow."""
    import duckdb

    headers = {**_LS_COLUMNS, **listed_columns()}
    cells = []
    for column in headers:
        name = '"' + column.replace('"', '""') + '"'
        if column == "started_at":
            cells.append(f"replace(left({name}, 16), 'T', ' ')")
        elif pa.types.is_floating(runs.schema.field(column).type):
            cells.append(f"printf('%.4g', {name})")
        else:
            cells.append(f"CAST({name} AS VARCHAR)")
    connection = duckdb.connect()
    connection.register("runs", runs)
    text = connection.sql("SELECT " + ", ".join(f"coalesce({c}, '')" for c in cells) + " FROM runs").to_arrow_table()
    padded = []
    for header, column in zip(headers.values(), text.columns, strict=True):
        width = max(len(header), pc.max(pc.utf8_length(column)).as_py() or 0)
        padded.append((header.ljust(width), pc.utf8_rpad(column, width=width)))
    head = "  ".join(h for h, _ in padded).rstrip()
    lines = pc.utf8_rtrim_whitespace(pc.binary_join_element_wise(*(c for _, c in padded), "  ")).combine_chunks()
    body = pc.binary_join(pa.ListArray.from_arrays([0, len(lines)], lines), "\n")[0].as_py()  # one join, in Arrow
    return f"{head}\n{body}" if len(lines) else head
