"""Fakes shaped like the modal and prime_sandboxes SDK surfaces the backends use (no network)."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace
from typing import Any


class Aio:
    """A callable with an `.aio` coroutine twin, as synchronicity exposes SDK methods."""

    def __init__(self, fn: Any) -> None:
        self.aio = fn


def modal_exceptions() -> SimpleNamespace:
    class Error(Exception):
        pass

    names = ["AuthError", "ResourceExhaustedError", "NotFoundError", "InternalError", "ConnectionError",
             "ImageBuildError", "SandboxTerminatedError", "ClientClosed", "PermissionDeniedError"]  # fmt: skip
    ns = SimpleNamespace(Error=Error)
    for n in names:
        setattr(ns, n, type(n, (Error,), {}))
    ns.TimeoutError = type("TimeoutError", (Error,), {})
    ns.SandboxTimeoutError = type("SandboxTimeoutError", (ns.TimeoutError,), {})
    ns.ExecTimeoutError = type("ExecTimeoutError", (ns.TimeoutError,), {})
    return ns


class FakeStream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __aiter__(self):
        async def gen():
            for c in self.chunks:
                yield c

        return gen()


class FakeProcess:
    def __init__(self, rc: int, out: list[bytes] | None = None, err: list[bytes] | None = None) -> None:
        self.stdout, self.stderr = FakeStream(out or []), FakeStream(err or [])

        async def wait() -> int:
            return rc

        self.wait = Aio(wait)


class FakeModalSandbox:
    ids = itertools.count(1)

    def __init__(self, world: FakeModal, tags: dict[str, str], kwargs: dict[str, Any]) -> None:
        self.object_id = f"sb-{next(self.ids)}"
        self.tags, self.kwargs, self.world = tags, kwargs, world
        self.terminated = False
        self.execs: list[tuple[str, ...]] = []

        async def exec_(*argv: str, **kw: Any) -> FakeProcess:
            self.execs.append(argv)
            return world.on_exec(argv, kw)

        async def terminate(wait: bool = False) -> int | None:
            self.terminated = True
            return 0 if wait else None

        async def get_tags() -> dict[str, str]:
            return dict(self.tags)

        self.exec, self.terminate, self.get_tags = Aio(exec_), Aio(terminate), Aio(get_tags)


class FakeModal:
    """Enough of the modal module: App.lookup, Image, Sandbox.create/list, exception."""

    def __init__(self) -> None:
        self.exception = modal_exceptions()
        self.sandboxes: list[FakeModalSandbox] = []
        self.create_errors: list[BaseException] = []
        self.create_delay = 0.0
        self.exec_results: list[FakeProcess] = []
        world = self

        async def lookup(name: str, create_if_missing: bool = False) -> str:
            return f"app:{name}"

        async def create(*argv: str, tags: dict[str, str], **kw: Any) -> FakeModalSandbox:
            if world.create_delay:
                await asyncio.sleep(world.create_delay)
            if world.create_errors:
                raise world.create_errors.pop(0)
            sb = FakeModalSandbox(world, tags, {"argv": argv, **kw})
            world.sandboxes.append(sb)
            return sb

        async def list_(tags: dict[str, str]):
            for sb in list(world.sandboxes):
                if not sb.terminated and all(sb.tags.get(k) == v for k, v in tags.items()):
                    yield sb

        self.App = SimpleNamespace(lookup=Aio(lookup))
        self.Image = SimpleNamespace(debian_slim=lambda: "img:debian", from_registry=lambda ref: f"img:{ref}")
        self.Sandbox = SimpleNamespace(create=Aio(create), list=Aio(list_))

    def on_exec(self, argv: tuple[str, ...], kw: dict[str, Any]) -> FakeProcess:
        if argv == ("true",):
            return FakeProcess(0)
        return self.exec_results.pop(0) if self.exec_results else FakeProcess(0, [b"out"], [])


# ---- prime ---------------------------------------------------------------------------------------------------
class APIError(Exception):
    pass


class UnauthorizedError(APIError):
    pass


class SandboxNotRunningError(RuntimeError):
    pass


class SandboxImagePullError(SandboxNotRunningError):
    pass


class SandboxOOMError(SandboxNotRunningError):
    pass


class CommandTimeoutError(Exception):
    pass


class FakePrimeClient:
    def __init__(self) -> None:
        self.created: dict[str, Any] = {}
        self.deleted: list[str] = []
        self.bulk: list[dict[str, Any]] = []
        self.create_errors: list[BaseException] = []
        self.wait_errors: list[BaseException] = []
        self.exec_results: list[Any] = []
        self.waits: list[int] = []
        self.ids = itertools.count(1)

    async def create(self, request: Any) -> Any:
        if self.create_errors:
            raise self.create_errors.pop(0)
        sid = f"prime-{next(self.ids)}"
        self.created[sid] = request
        return SimpleNamespace(id=sid, labels=request.labels)

    async def wait_for_creation(self, sandbox_id: str, max_attempts: int = 60) -> None:
        self.waits.append(max_attempts)
        if self.wait_errors:
            raise self.wait_errors.pop(0)

    async def execute_command(self, sandbox_id: str, command: str, env: Any = None, timeout: Any = None) -> Any:
        result = self.exec_results.pop(0) if self.exec_results else SimpleNamespace(stdout="hi\n", stderr="",
                                                                                     exit_code=0)  # fmt: skip
        if isinstance(result, BaseException):
            raise result
        return result

    async def delete(self, sandbox_id: str) -> dict[str, Any]:
        self.deleted.append(sandbox_id)
        return {}

    async def bulk_delete(self, sandbox_ids: list[str] | None = None, labels: list[str] | None = None) -> Any:
        self.bulk.append({"sandbox_ids": sandbox_ids, "labels": labels})
        if labels:
            hit = [i for i, r in self.created.items() if set(labels) <= set(r.labels) and i not in self.deleted]
        else:
            hit = list(sandbox_ids or [])
        self.deleted += hit
        return SimpleNamespace(succeeded=hit, failed=[])

    async def list(self, labels: list[str], exclude_terminated: bool, page: int, per_page: int) -> Any:
        live = [SimpleNamespace(id=i, labels=r.labels) for i, r in self.created.items()
                if set(labels) <= set(r.labels) and i not in self.deleted]  # fmt: skip
        return SimpleNamespace(sandboxes=live, has_next=False)


def fake_prime_sdk() -> SimpleNamespace:
    from prime_sandboxes import CreateSandboxRequest

    return SimpleNamespace(CreateSandboxRequest=CreateSandboxRequest, AsyncSandboxClient=FakePrimeClient)
