"""The library's helpers a plug-in uses, named here so that a plug-in imports benchbed only through benchbed.api and
the kit: run discovery, console-log cleaning, redaction, the sandbox failure classifier and event spans, and the
live figures and file tail of `benchbed watch`. Each loads on first use (PEP 562): a run marker that needs only
`by_name` imports no sandbox or pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchbed.lazy import lazy_getattr

if TYPE_CHECKING:
    from benchbed.logtext import split_ray_line, strip_ansi
    from benchbed.runs import by_folder, by_name
    from benchbed.sandbox.events import Ev, SandboxEvent, add_spans
    from benchbed.sandbox.reasons import failure_reason
    from benchbed.secrets import is_secret_name, redact, redact_mapping
    from benchbed.watch.live import LiveFigures
    from benchbed.watch.tail import FileTail

_WHERE = {
    "split_ray_line": "benchbed.logtext",
    "strip_ansi": "benchbed.logtext",
    "by_folder": "benchbed.runs",
    "by_name": "benchbed.runs",
    "Ev": "benchbed.sandbox.events",
    "SandboxEvent": "benchbed.sandbox.events",
    "add_spans": "benchbed.sandbox.events",
    "failure_reason": "benchbed.sandbox.reasons",
    "is_secret_name": "benchbed.secrets",
    "redact": "benchbed.secrets",
    "redact_mapping": "benchbed.secrets",
    "LiveFigures": "benchbed.watch.live",
    "FileTail": "benchbed.watch.tail",
}
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


__getattr__ = lazy_getattr(__name__, _WHERE)
