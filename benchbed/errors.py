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
