"""Sandboxes for environments and for measuring providers: local (bubblewrap), Modal and Prime backends behind one
interface, a pool with admission control, and sandbox-bench. Every step becomes sandbox.* trace spans."""

from benchbed.sandbox.base import ExecResult, Handle, SandboxBackend, SandboxFailure, SandboxSpec
from benchbed.sandbox.events import Ev, EventSink, add_spans
from benchbed.sandbox.pool import PoolConfig, SandboxOutcome, SandboxPool
from benchbed.sandbox.registry import BackendUnavailable, get_backend

__all__ = [
    "BackendUnavailable", "Ev", "EventSink", "ExecResult", "Handle", "PoolConfig", "SandboxOutcome", "SandboxBackend",
    "SandboxFailure", "SandboxPool", "SandboxSpec", "add_spans", "get_backend",
]  # fmt: skip
