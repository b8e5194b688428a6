"""`python -m benchbed` is the `benchbed` command."""

from benchbed.cli.main import cli

cli(prog_name="benchbed")
