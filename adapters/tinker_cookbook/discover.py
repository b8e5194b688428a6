"""A tinker-cookbook run is its `log_path` folder: the one holding the JsonLogger's metrics.jsonl."""

from __future__ import annotations

from benchbed.adapterkit.shared import by_name

marks_run = by_name(("metrics.jsonl",))
