"""The `--store` option every command that reads or writes the results store takes (one definition)."""

from __future__ import annotations

from pathlib import Path

import click

from benchbed.store import DEFAULT_STORE

store_option = click.option(
    "--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_STORE,
    show_default=True, help="results directory",
)  # fmt: skip
