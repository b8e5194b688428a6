"""The sandbox backend interface shared by the local, Modal and Prime backends: specs, handles, results, failures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from benchbed.errors import BenchbedError
from benchbed.keys import SANDBOX_FAILURE_REASONS

MiB = 1 << 20


class SandboxSpec(BaseModel):
    """What a sandbox gets: image, resource caps, lifetime and the files it may see."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(None, description="container image (Modal/Prime); the local backend uses host /usr")
    cpu: float = Field(1.0, gt=0, description="CPU cores (quota)")
    memory_mb: int = Field(512, gt=0, description="memory cap incl. tmpfs pages and kernel memory")
    pids_max: int = Field(256, gt=0, description="processes and threads")
    disk_mb: int = Field(256, gt=0, description="size of the working directory (tmpfs)")
    max_files: int = Field(50_000, gt=0, description="inodes in the working directory")
    nofile: int = Field(1024, gt=0, description="open files per process")
    lifetime_s: float = Field(600.0, gt=0, description="wall-clock lifetime of the sandbox")
    output_limit_bytes: int = Field(MiB, gt=0, description="per stream, per exec; the exec is killed past it")
    block_network: bool = True
    env: dict[str, str] = Field(default_factory=dict, description="extra environment for every exec")
    ro_binds: list[str] = Field(default_factory=list, description="extra host paths bound read-only (local)")
    tags: dict[str, str] = Field(default_factory=dict)


class SandboxFailure(BenchbedError):
    """A sandbox step failed; `reason` is one of keys.SANDBOX_FAILURE_REASONS, `message` the raw provider text."""

    def __init__(self, reason: str, message: str, *, sandbox_id: str = "") -> None:
        if reason not in SANDBOX_FAILURE_REASONS:
            raise ValueError(f"unknown sandbox failure reason {reason!r}; expected one of {SANDBOX_FAILURE_REASONS}")
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.sandbox_id = sandbox_id


@dataclass
class Handle:
    """A live sandbox. Backends keep their own state in `state`."""

    id: str
    backend: str
    key: str
    state: Any = None
    closed: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class ExecResult:
    """How one command ended. `reason` is a normalized failure reason; `limit` names the local limit that fired."""

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    reason: str | None = None
    limit: str | None = None
    truncated: bool = False
    wall_s: float = 0.0
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.reason is None and self.limit is None and self.exit_code == 0


OnStep = Callable[[str], None]
"""Callback a backend calls with "create_sent" and "started" while creating (the pool stamps the time)."""


@runtime_checkable
class SandboxBackend(Protocol):
    """create -> exec* -> close; sweep removes what earlier runs left behind. All calls are bounded by deadlines."""

    name: str
    retryable: frozenset[str]

    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle: ...

    async def exec(
        self, handle: Handle, argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None
    ) -> ExecResult: ...

    async def close(self, handle: Handle) -> None: ...

    async def sweep(self, *, final: bool = False) -> int: ...

    async def shutdown(self) -> None: ...
