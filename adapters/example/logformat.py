"""The toy loop's log: its file name and the header that names its format (what parse checks first)."""

from __future__ import annotations

LOG = "example-log.jsonl"
FORMAT = "benchbed-example-log"
VERSION = "1"
