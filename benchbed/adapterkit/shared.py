"""The library's helpers a plug-in uses, named here so that a plug-in imports benchbed only through benchbed.api and
the kit: run discovery, console-log cleaning, redaction, the sandbox failure classifier and event spans, and the
live figures and file tail of `benchbed watch`."""

from __future__ import annotations

from benchbed.logtext import split_ray_line, strip_ansi
from benchbed.runs import by_folder, by_name
from benchbed.sandbox.events import Ev, SandboxEvent, add_spans
from benchbed.sandbox.reasons import failure_reason
from benchbed.secrets import is_secret_name, redact, redact_mapping
from benchbed.watch.live import LiveFigures
from benchbed.watch.tail import FileTail

__all__ = [
    "Ev",
    "FileTail",
    "LiveFigures",
    "SandboxEvent",
    "add_spans",
    "by_folder",
    "by_name",
    "failure_reason",
    "is_secret_name",
    "redact",
    "redact_mapping",
    "split_ray_line",
    "strip_ansi",
]
