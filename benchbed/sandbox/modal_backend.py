"""Modal backend (extra `modal`): async SDK, every sandbox tagged with the run, shielded creates, deadlines
shorter than the client's own retries, throttling surfaced as a failure, orphans swept by tag."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from benchbed.liveness import pid_alive
from benchbed.sandbox.base import ExecResult, Handle, OnStep, SandboxFailure, SandboxSpec
from benchbed.sandbox.late import LateCloses
from benchbed.sandbox.reasons import failure_reason
from benchbed.sandbox.registry import require_credentials, require_sdk

APP_NAME = "benchbed-sandboxes"
MAX_THROTTLE_WAIT_S = 5
CALL_TIMEOUT_S = 30.0  # below the ~56 s the client spends retrying an unreachable server


def classify(exc: BaseException, exc_mod: Any) -> str:
    """Normalize a Modal SDK exception to a SANDBOX_FAILURE_REASONS entry: by type, else by its text."""

    def isa(*names: str) -> bool:
        return any(isinstance(exc, cls) for n in names if isinstance(cls := getattr(exc_mod, n, None), type))

    if isinstance(exc, asyncio.TimeoutError):
        return "start_timeout"
    if isa("AuthError", "PermissionDeniedError"):
        return "auth"
    if isa("ResourceExhaustedError"):  # a rate limit, unless its text names a quota or capacity
        by_text = failure_reason(str(exc))
        return by_text if by_text == "no_capacity" else "rate_limited"
    if isa("SandboxTimeoutError"):
        return "lifetime_timeout"
    if isa("ExecTimeoutError"):
        return "exec_timeout"
    if isa("SandboxTerminatedError", "NotFoundError", "ClientClosed"):
        return "lost"
    if isa("ImageBuildError"):
        return "image_error"
    if isa("TimeoutError"):
        return "start_timeout"
    return failure_reason(f"{type(exc).__name__}: {exc}")


@dataclass
class ModalState:
    sandbox: Any
    spec: SandboxSpec


class ModalBackend:
    """Sandboxes on Modal. `sdk` is the `modal` module (a fake in tests)."""

    name = "modal"
    retryable = frozenset({"rate_limited", "no_capacity", "start_timeout", "internal"})

    def __init__(
        self, *, app_name: str = APP_NAME, run_id: str | None = None, sdk: ModuleType | None = None,
        max_throttle_wait_s: int = MAX_THROTTLE_WAIT_S, call_timeout_s: float = CALL_TIMEOUT_S,
    ) -> None:  # fmt: skip
        # Read by the client on every retry: throttling then fails fast instead of sleeping without bound.
        os.environ.setdefault("MODAL_MAX_THROTTLE_WAIT", str(max_throttle_wait_s))
        if sdk is None:
            require_sdk(self.name, "modal", "modal")
            if not Path(os.environ.get("MODAL_CONFIG_PATH") or Path.home() / ".modal.toml").exists():
                require_credentials(self.name, ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"))
            import modal as sdk  # the optional extra, imported only when this backend is used
        self.sdk = sdk
        self.app_name = app_name
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.call_timeout_s = call_timeout_s
        self.host = socket.gethostname()
        self.tags = {"benchbed": "1", "benchbed_run": self.run_id, "benchbed_host": self.host,
                     "benchbed_pid": str(os.getpid())}  # fmt: skip
        self.warnings: list[str] = []
        self._app: Any = None
        self._late = LateCloses()

    async def _call(self, coro: Any, timeout: float | None = None) -> Any:
        return await asyncio.wait_for(coro, timeout or self.call_timeout_s)

    async def _get_app(self, timeout: float) -> Any:
        if self._app is None:
            self._app = await self._call(self.sdk.App.lookup.aio(self.app_name, create_if_missing=True), timeout)
        return self._app

    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle:
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        exc_mod = self.sdk.exception
        try:
            app = await self._get_app(deadline_s)
            image = self.sdk.Image.from_registry(spec.image) if spec.image else self.sdk.Image.debian_slim()
            on_step("create_sent")
            create = asyncio.ensure_future(self.sdk.Sandbox.create.aio(
                "sleep", "infinity", app=app, image=image, timeout=max(1, int(spec.lifetime_s)),
                cpu=(spec.cpu, spec.cpu), memory=(spec.memory_mb, spec.memory_mb), block_network=spec.block_network,
                env=dict(spec.env) or None, tags={**self.tags, **spec.tags, "benchbed_key": key},
            ))  # fmt: skip
            try:
                # Shielded: a create that lands after our deadline is terminated, never left running.
                sandbox = await asyncio.wait_for(asyncio.shield(create), max(0.0, end - loop.time()))
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._late.close_when_done(create, lambda sandbox: self._call(sandbox.terminate.aio()))
                raise
            on_step("started")
            try:
                # V2 sandboxes report scheduling problems on first use: ready = a trivial exec has succeeded.
                proc = await asyncio.wait_for(sandbox.exec.aio("true"), max(0.0, end - loop.time()))
                rc = await asyncio.wait_for(proc.wait.aio(), max(0.0, end - loop.time()))
            except BaseException:
                with contextlib.suppress(Exception):
                    await self._call(sandbox.terminate.aio(), 10)
                raise
            if rc != 0:
                with contextlib.suppress(Exception):
                    await self._call(sandbox.terminate.aio(), 10)
                raise SandboxFailure("internal", f"readiness exec returned {rc}", sandbox_id=sandbox.object_id)
        except SandboxFailure:
            raise
        except asyncio.TimeoutError as exc:
            raise SandboxFailure("start_timeout", f"not ready within {deadline_s:g}s") from exc
        except Exception as exc:
            raise SandboxFailure(classify(exc, exc_mod), f"{type(exc).__name__}: {exc}") from exc
        return Handle(id=sandbox.object_id, backend=self.name, key=key, state=ModalState(sandbox, spec),
                      warnings=self.warnings)  # fmt: skip

    async def exec(
        self, handle: Handle, argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None
    ) -> ExecResult:
        state: ModalState = handle.state
        cap = state.spec.output_limit_bytes
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        exc_mod = self.sdk.exception
        try:
            proc = await self._call(state.sandbox.exec.aio(*argv, timeout=max(1, math.ceil(timeout_s)), env=env,
                                                           text=False))  # fmt: skip
            (out, out_trunc), (err, err_trunc) = await asyncio.wait_for(
                asyncio.gather(_read_capped(proc.stdout, cap), _read_capped(proc.stderr, cap)), timeout_s + 10
            )
            if out_trunc or err_trunc:
                return ExecResult(exit_code=None, stdout=out, stderr=err, truncated=True, limit="output",
                                  wall_s=loop.time() - t0, message=f"output exceeded {cap} bytes")  # fmt: skip
            rc = await asyncio.wait_for(proc.wait.aio(), timeout_s + 10)
        except asyncio.TimeoutError:
            return ExecResult(exit_code=None, reason="exec_timeout", limit="wall", wall_s=loop.time() - t0,
                              message=f"exec exceeded {timeout_s:g}s")  # fmt: skip
        except Exception as exc:
            reason = classify(exc, exc_mod)
            return ExecResult(exit_code=None, reason="exec_timeout" if reason == "start_timeout" else reason,
                              wall_s=loop.time() - t0, message=f"{type(exc).__name__}: {exc}")  # fmt: skip
        res = ExecResult(exit_code=rc, stdout=out, stderr=err, wall_s=loop.time() - t0)
        if rc == -1:  # Modal reports an exec timeout as return code -1
            res.exit_code, res.reason, res.limit, res.message = None, "exec_timeout", "wall", "exec timed out"
        elif rc == 137:
            res.message = "killed (SIGKILL): out of memory or terminated"
        return res

    async def close(self, handle: Handle) -> None:
        if handle.closed:
            return
        state: ModalState = handle.state
        exc_mod = self.sdk.exception
        try:
            await self._call(state.sandbox.terminate.aio(wait=True))
        except Exception as exc:
            if classify(exc, exc_mod) != "lost":  # already gone counts as closed
                raise SandboxFailure(classify(exc, exc_mod), f"terminate failed: {exc}") from exc
        handle.closed = True

    async def sweep(self, *, final: bool = False) -> int:
        """Terminate this run's sandboxes (final) or those of dead benchbed processes on this host (start)."""
        tags = {"benchbed_run": self.run_id} if final else {"benchbed_host": self.host}
        count = 0

        async def walk() -> None:
            nonlocal count
            async for sandbox in self.sdk.Sandbox.list.aio(tags=tags):
                if not final:
                    pid = (await sandbox.get_tags.aio()).get("benchbed_pid", "")
                    if not pid.isdigit() or pid_alive(int(pid)):
                        continue
                with contextlib.suppress(Exception):
                    await self._call(sandbox.terminate.aio())
                    count += 1

        try:
            await asyncio.wait_for(walk(), self.call_timeout_s * 2)
        except Exception as exc:  # a sweep never hides the run's own result; it is reported instead
            self.warnings.append(f"modal orphan sweep incomplete: {type(exc).__name__}: {exc}")
        return count

    async def shutdown(self) -> None:
        await self._late.wait(self.call_timeout_s)


async def _read_capped(stream: Any, cap: int) -> tuple[bytes, bool]:
    """Read a Modal output stream until EOF or `cap` bytes; (data, truncated)."""
    buf = bytearray()
    async for chunk in stream:
        data = chunk.encode() if isinstance(chunk, str) else chunk
        if len(buf) + len(data) > cap:
            buf += data[: cap - len(buf)]
            return bytes(buf), True
        buf += data
    return bytes(buf), False
