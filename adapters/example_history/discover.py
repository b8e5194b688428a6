"""A run is the folder holding the loop's history file."""

from __future__ import annotations

from benchbed.adapterkit.shared import by_name

HISTORY = "history.jsonl"
marks_run = by_name((HISTORY,))
