"""Prime Intellect backend (extra `prime`): labelled sandboxes, a bounded wait_for_creation, exec through the
API, bulk_delete sweeps of this run's (and dead runs') sandboxes."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shlex
import socket
import uuid
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from benchbed.liveness import pid_alive
from benchbed.sandbox.base import ExecResult, Handle, OnStep, SandboxFailure, SandboxSpec
from benchbed.sandbox.late import LateCloses
from benchbed.sandbox.reasons import failure_reason
from benchbed.sandbox.registry import require_credentials, require_sdk

DEFAULT_IMAGE = "python:3.11-slim"
CALL_TIMEOUT_S = 30.0
_FAST_POLLS = 5  # prime-sandboxes 0.5.1: the first 5 polls are 1 s apart, later ones 2 s


def creation_attempts(budget_s: float) -> int:
    """`max_attempts` for wait_for_creation whose wall budget does not exceed `budget_s`."""
    if budget_s <= _FAST_POLLS:
        return max(1, int(budget_s))
    return max(1, _FAST_POLLS + int((budget_s - _FAST_POLLS) // 2))


def classify(exc: BaseException) -> str:
    """Normalize a prime-sandboxes exception to a SANDBOX_FAILURE_REASONS entry. An HTTP status or wording that
    says auth, rate limit or capacity outranks the exception's type; otherwise the type, else the text decides."""
    name = type(exc).__name__
    if isinstance(exc, asyncio.TimeoutError) or name in ("APITimeoutError",):
        return "start_timeout"
    if name in ("UnauthorizedError", "PaymentRequiredError"):
        return "auth"
    by_text = failure_reason(str(exc))
    if by_text in ("auth", "rate_limited", "no_capacity"):
        return by_text
    by_type = {"SandboxOOMError": "oom", "SandboxTimeoutError": "lifetime_timeout",
               "SandboxImagePullError": "image_error", "CommandTimeoutError": "exec_timeout",
               "SandboxNotRunningError": "lost"}  # fmt: skip
    for cls in type(exc).__mro__:
        if cls.__name__ in by_type:
            return by_type[cls.__name__]
    return by_text


@dataclass
class PrimeState:
    sandbox_id: str
    spec: SandboxSpec


class PrimeBackend:
    """Sandboxes on Prime Intellect. `sdk` is the `prime_sandboxes` module (a fake in tests)."""

    name = "prime"
    retryable = frozenset({"rate_limited", "no_capacity", "start_timeout", "internal"})

    def __init__(self, *, run_id: str | None = None, sdk: ModuleType | None = None, client: Any = None,
                 call_timeout_s: float = CALL_TIMEOUT_S) -> None:  # fmt: skip
        if sdk is None:
            require_sdk(self.name, "prime_sandboxes", "prime")
            require_credentials(self.name, ("PRIME_API_KEY",))
            import prime_sandboxes as sdk  # the optional extra, imported only when this backend is used
        self.sdk = sdk
        self.client = client or sdk.AsyncSandboxClient()
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.call_timeout_s = call_timeout_s
        self.host = re.sub(r"[^a-z0-9-]", "-", socket.gethostname().lower())
        self.labels = ["benchbed", f"benchbed-run-{self.run_id}", f"benchbed-host-{self.host}",
                       f"benchbed-pid-{os.getpid()}"]  # fmt: skip
        self.warnings: list[str] = []
        self._late = LateCloses()

    async def _call(self, coro: Any, timeout: float | None = None) -> Any:
        return await asyncio.wait_for(coro, timeout or self.call_timeout_s)

    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle:
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        request = self.sdk.CreateSandboxRequest(
            name=f"benchbed-{self.run_id}-{key}"[:60], docker_image=spec.image or DEFAULT_IMAGE, cpu_cores=spec.cpu,
            memory_gb=spec.memory_mb / 1024, disk_size_gb=max(1.0, spec.disk_mb / 1024),
            timeout_minutes=max(1, math.ceil(spec.lifetime_s / 60)), environment_vars=dict(spec.env) or None,
            labels=[*self.labels, *(f"{k}-{v}" for k, v in spec.tags.items())],
            network_allowlist=[] if spec.block_network else None, idempotency_key=f"{self.run_id}-{key}",
        )  # fmt: skip
        on_step("create_sent")
        create = asyncio.ensure_future(self.client.create(request))
        sandbox_id = ""
        try:
            try:
                sandbox = await asyncio.wait_for(asyncio.shield(create), max(0.0, end - loop.time()))
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._late.close_when_done(create, lambda sandbox: self._call(self.client.delete(sandbox.id)))
                raise
            sandbox_id = sandbox.id
            on_step("started")
            budget = max(0.0, end - loop.time())
            await asyncio.wait_for(self.client.wait_for_creation(sandbox_id, max_attempts=creation_attempts(budget)),
                                   budget)  # fmt: skip
        except BaseException as exc:
            if sandbox_id:
                with contextlib.suppress(Exception):
                    await self._call(self.client.delete(sandbox_id), 10)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, asyncio.TimeoutError):
                message = f"not running within {deadline_s:g}s"
                raise SandboxFailure("start_timeout", message, sandbox_id=sandbox_id) from exc
            if isinstance(exc, Exception):
                raise SandboxFailure(classify(exc), f"{type(exc).__name__}: {exc}", sandbox_id=sandbox_id) from exc
            raise
        return Handle(id=sandbox_id, backend=self.name, key=key, state=PrimeState(sandbox_id, spec),
                      warnings=self.warnings)  # fmt: skip

    async def exec(
        self, handle: Handle, argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None
    ) -> ExecResult:
        state: PrimeState = handle.state
        cap = state.spec.output_limit_bytes
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            resp = await asyncio.wait_for(
                self.client.execute_command(state.sandbox_id, shlex.join(argv), env=env,
                                            timeout=max(1, math.ceil(timeout_s))),
                timeout_s + 15,
            )  # fmt: skip
        except asyncio.TimeoutError:
            return ExecResult(exit_code=None, reason="exec_timeout", limit="wall", wall_s=loop.time() - t0,
                              message=f"exec exceeded {timeout_s:g}s")  # fmt: skip
        except Exception as exc:
            reason = classify(exc)
            return ExecResult(exit_code=None, reason="exec_timeout" if reason == "start_timeout" else reason,
                              wall_s=loop.time() - t0, message=f"{type(exc).__name__}: {exc}")  # fmt: skip
        out, err = (resp.stdout or "").encode(), (resp.stderr or "").encode()
        res = ExecResult(exit_code=resp.exit_code, stdout=out[:cap], stderr=err[:cap], wall_s=loop.time() - t0)
        if len(out) > cap or len(err) > cap:
            res.truncated, res.limit, res.message = True, "output", f"output exceeded {cap} bytes"
        return res

    async def close(self, handle: Handle) -> None:
        if handle.closed:
            return
        try:
            await self._call(self.client.delete(handle.state.sandbox_id))
        except Exception as exc:
            if classify(exc) != "lost" and "404" not in str(exc):
                raise SandboxFailure(classify(exc), f"delete failed: {exc}") from exc
        handle.closed = True

    async def sweep(self, *, final: bool = False) -> int:
        """bulk_delete this run's sandboxes (final), or, at start, those of dead benchbed processes on this host."""
        try:
            if final:
                resp = await self._call(self.client.bulk_delete(labels=[f"benchbed-run-{self.run_id}"]))
                return len(resp.succeeded or [])
            orphans: list[str] = []
            page = 1
            while True:
                listing = await self._call(
                    self.client.list(
                        labels=[f"benchbed-host-{self.host}"], exclude_terminated=True, page=page, per_page=100
                    )
                )
                for sb in listing.sandboxes:
                    pids = [lb.removeprefix("benchbed-pid-") for lb in sb.labels if lb.startswith("benchbed-pid-")]
                    if pids and pids[0].isdigit() and not pid_alive(int(pids[0])):
                        orphans.append(sb.id)
                if not listing.has_next:
                    break
                page += 1
            if orphans:
                resp = await self._call(self.client.bulk_delete(sandbox_ids=orphans))
                return len(resp.succeeded or [])
            return 0
        except Exception as exc:  # a sweep never hides the run's own result; it is reported instead
            self.warnings.append(f"prime orphan sweep incomplete: {type(exc).__name__}: {exc}")
            return 0

    async def shutdown(self) -> None:
        await self._late.wait(self.call_timeout_s)
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
