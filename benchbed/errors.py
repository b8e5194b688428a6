"""Exception types shared across benchbed; each message says what was expected and what to do."""

from __future__ import annotations


class BenchbedError(Exception):
    """Base for errors that the CLI prints as one line and exits non-zero."""


class SpecError(BenchbedError):
    """An experiment spec is missing, unreadable, or invalid."""


class TraceError(BenchbedError):
    """A trace is malformed: unknown key, bad column, t1 < t0, unreadable file."""


class StoreError(BenchbedError):
    """The results store holds something benchbed cannot read or must not overwrite."""


class AdapterError(BenchbedError):
    """An adapter is unknown, cannot be loaded, or cannot render or parse."""


class NotThisFrameworkError(AdapterError):
    """The input was written by another framework (or by nothing benchbed knows)."""


class LaunchError(BenchbedError):
    """A launch could not start (missing executable, missing checkout)."""


class OutputError(BenchbedError):
    """An output file (report, export, JUnit, page, record) cannot be written; names the user's path."""


class RunFailedError(AdapterError):
    """The input is the framework's log of a run that died before its first step: nothing to measure, but a run.

    `error` is the line it died on (a traceback's last line) and `log_tail` the traceback; ingest keeps a `failed`
    record with them instead of refusing the input."""

    def __init__(self, message: str, *, framework: str, error: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.framework, self.error, self.log_tail = framework, error, log_tail
