"""Local backend: one bubblewrap sandbox per create, commands entered with nsenter, limits from cgroups + rlimits."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import logging
import math
import os
import resource
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.sandbox.base import ExecResult, Handle, OnStep, SandboxFailure, SandboxSpec
from benchbed.sandbox.capabilities import WORK_MOUNT, LocalCapabilities, detect
from benchbed.sandbox.cgroups import Limits, SandboxCgroups, remove_parents, sweep
from benchbed.sandbox.procs import Child, become_subreaper, reap_orphans, release_subreaper, run_blocking

log = logging.getLogger(__name__)

WORKDIR = "/tmp"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
UID_BASE = 600_000_000
READY = b"R\n"
# The helpers (sh, unshare, mount, bwrap, nsenter) start with this environment only, so nothing of the
# harness's environment (tokens, keys) can be read from /proc/<pid>/environ inside the sandbox.
HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
# /etc entries a dynamically linked program needs; nothing else of the host's /etc is visible.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf", "hosts",
             "python3", "python3.11", "python3.12", "python3.13", "mime.types", "os-release")  # fmt: skip
ETC_CACHE = Path("/run/benchbed")
_seq = itertools.count(1)


class BadCommand(ValueError):
    """The command cannot run in the sandbox (empty, or not found inside it)."""


@dataclass
class LocalState:
    uid: int
    cgroups: SandboxCgroups | None
    holder: Child
    sandbox_pid: int
    spec: SandboxSpec
    payload_pid: int | None = None  # found on the first exec: bookkeeping kept off the start's critical path
    execs: list[Child] = field(default_factory=list)
    leaf: itertools.count = field(default_factory=lambda: itertools.count(1))
    lifetime: asyncio.TimerHandle | None = None
    counters: dict[str, int] = field(default_factory=dict)
    expired: bool = False


def etc_snapshot(root: Path = ETC_CACHE) -> Path | None:
    """A read-only copy of the few /etc entries programs need, bound as the sandbox's whole /etc in one mount
    (instead of one bind per file). Content-addressed, so concurrent harnesses share it; None if /run is not ours."""
    present = [n for n in ETC_FILES if (Path("/etc") / n).exists()]
    digest = hashlib.sha256()
    for name in present:
        for path in sorted([Path("/etc") / name, *(Path("/etc") / name).rglob("*")]):
            digest.update(str(path).encode())
            digest.update(os.readlink(path).encode() if path.is_symlink() else b"")
            if path.is_file() and not path.is_symlink():
                digest.update(path.read_bytes())
    target = root / f"etc-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    try:
        tmp = root / f".etc-{os.getpid()}-{next(_seq)}"
        tmp.mkdir(parents=True, mode=0o755)
        for name in present:
            src = Path("/etc") / name
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, tmp / name, symlinks=True)
            else:
                shutil.copy2(src, tmp / name, follow_symlinks=False)
        tmp.chmod(0o755)
        try:
            tmp.rename(target)
        except OSError:  # another harness made the same snapshot first
            shutil.rmtree(tmp, ignore_errors=True)
        return target
    except OSError:
        return None


def _host_binds(etc: Path | None) -> list[str]:
    """Bind /usr and the few /etc files read-only; mirror /bin, /lib... as symlinks when the host has them so.
    The same for every sandbox of a process: computed once per backend."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    if etc is not None:
        args += ["--ro-bind", str(etc), "/etc"]
    else:
        for name in ETC_FILES:
            if (Path("/etc") / name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def resolve_command(argv: list[str], spec: SandboxSpec) -> None:
    """Fail early, with a clear message, on an empty command or one the sandbox cannot see."""
    if not argv or not argv[0]:
        raise BadCommand("empty command: give the program to run after `--`, e.g. -- python3 -c 'print(1)'")
    visible = ["/usr", "/bin", "/sbin", "/lib", "/lib64", *spec.ro_binds]
    prog = argv[0]
    if "/" in prog:
        candidates = [prog] if prog.startswith("/") else []
        if not prog.startswith("/"):
            return  # relative to the working directory, created inside the sandbox
    else:
        candidates = [f"{d}/{prog}" for d in SANDBOX_PATH.split(":")]
    for path in candidates:
        if (
            os.path.isfile(path)
            and os.access(path, os.X_OK)
            and any(path == v or path.startswith(v.rstrip("/") + "/") for v in visible)
        ):
            return
    raise BadCommand(
        f"command {prog!r} not found in the sandbox (PATH={SANDBOX_PATH}; visible read-only: /usr, /etc essentials"
        f"{', ' + ', '.join(spec.ro_binds) if spec.ro_binds else ''}); use an absolute path under a visible "
        "directory or add --ro-bind DIR"
    )


def _csv(paths: list[Path]) -> str:
    return ",".join(str(p) for p in paths) or "-"


def _drop_to(uid: int) -> str:
    """Drop to the sandbox uid (and no supplementary groups) before bubblewrap, which then sets no_new_privs."""
    return f"unshare --setuid {uid} --setgid {uid}"


def _first_child(pid: int) -> int:
    """The sandbox's payload (the shell that printed ready) is the only child of bwrap's pid 1."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError as exc:
        raise SandboxFailure("internal", f"cannot find the sandbox payload under pid {pid}: {exc}") from exc
    if not children:
        raise SandboxFailure("lost", f"sandbox init {pid} has no payload process")
    return int(children[0])


def _reaped(pid: int | None) -> bool:
    """True once `pid` (a child of ours after its parent died) is gone; reaps it if it has just exited."""
    if pid is None:
        return True
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


# What a program prints when a thread or an allocation is refused (Python, glibc, C++).
_ALLOCATION_FAILED = (b"can't start new thread", b"Cannot allocate memory", b"MemoryError", b"std::bad_alloc")


class LocalBackend:
    """bubblewrap sandboxes on this host. Detects capabilities at construction and warns about each gap once."""

    name = "local"
    retryable = frozenset({"start_timeout", "internal"})

    def __init__(self, caps: LocalCapabilities | None = None) -> None:
        self.caps = caps or detect()
        self.warnings = list(self.caps.warnings)
        for w in self.warnings:
            log.warning("local sandbox degraded: %s", w)
        self.live: dict[str, Handle] = {}
        self._uid_block = UID_BASE + (os.getpid() % 1000) * 100_000
        self.etc = etc_snapshot() if self.caps.root else None
        self.host_binds = _host_binds(self.etc)
        self.spare: asyncio.Future[SandboxCgroups] | None = None  # cgroups made ahead for the next create
        self.closing = False
        self.starting = 0  # creates between request and ready
        self.payload_fd: int | None = None
        self.subreaper = False  # set by the first create: see _adopt_orphans
        self._subreaper_asked = False

    # ---- create -------------------------------------------------------------------------------------------
    def _rlimit_script(self, spec: SandboxSpec, cpu_s: float) -> str:
        file_blocks = spec.disk_mb * 2048  # dash counts 512-byte blocks
        vmem_kib = (spec.memory_mb * 2 + 1024) * 1024
        limits = [f"ulimit -n {spec.nofile}", f"ulimit -f {file_blocks}", f"ulimit -t {max(1, math.ceil(cpu_s))}",
                  f"ulimit -v {vmem_kib}"]  # fmt: skip
        if self.caps.per_sandbox_uid:
            limits.append(f"ulimit -p {spec.pids_max + 8}")  # floor; the pids cgroup fires first and is counted
        return " && ".join(limits) + " || exit 122"

    def _rlimits(self, spec: SandboxSpec, cpu_s: float) -> str:
        """The limits of _rlimit_script in the helper's RESOURCE:VALUE form."""
        limits = [(resource.RLIMIT_NOFILE, spec.nofile), (resource.RLIMIT_FSIZE, spec.disk_mb << 20),
                  (resource.RLIMIT_CPU, max(1, math.ceil(cpu_s))),
                  (resource.RLIMIT_AS, (spec.memory_mb * 2 + 1024) << 20)]  # fmt: skip
        if self.caps.per_sandbox_uid:
            limits.append((resource.RLIMIT_NPROC, spec.pids_max + 8))
        return ",".join(f"{r}:{v}" for r, v in limits)

    def _exec_script(self, state: LocalState, dirs: list[Path], timeout_s: float) -> str:
        return (f"{self._join_script(dirs)}\n{self._rlimit_script(state.spec, timeout_s * state.spec.cpu + 1)}\n"
                f"exec {self.caps.tools['nsenter']} -t {state.payload_pid} -U -m -p -n -i -u -C -r -w "
                f'-S {state.uid} -G {state.uid} "$@"')  # fmt: skip

    @staticmethod
    def _join_script(dirs: list[Path]) -> str:
        if not dirs:
            return ":"
        return " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in dirs) + " || exit 121"

    def _payload_fd(self) -> int:
        """The helper binary, opened once: run from this fd as the sandbox's payload (see helper.py, `wait`)."""
        if self.payload_fd is None:
            assert self.caps.helper is not None
            self.payload_fd = os.open(self.caps.helper, os.O_RDONLY)
        return self.payload_fd

    def _bwrap_argv(self, spec: SandboxSpec, info_fd: int, payload_fd: int | None = None) -> list[str]:
        argv = [
            self.caps.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            *self.host_binds,
            *[a for p in spec.ro_binds for a in ("--ro-bind", p, p)],
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(min(spec.disk_mb, 64) << 20),
            "--tmpfs",
            "/dev/shm",
        ]
        if self.caps.private_tmpfs:
            argv += ["--bind", str(WORK_MOUNT), WORKDIR]
        else:
            argv += ["--size", str(spec.disk_mb * 1024 * 1024), "--tmpfs", WORKDIR]
        if not spec.block_network:
            argv.remove("--unshare-all")
            argv[1:1] = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup"]
        argv += ["--hostname", "sandbox", "--chdir", WORKDIR, "--remount-ro", "/dev", "--remount-ro", "/", "--clearenv",
                 "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", WORKDIR, "--info-fd", str(info_fd)]  # fmt: skip
        # The payload prints R (ready), then blocks on a pipe we never write.
        if payload_fd is not None:
            return [*argv, f"/proc/self/fd/{payload_fd}", "wait"]
        return [*argv, "/bin/sh", "-c", "echo R && read -r _"]

    def _cgroups_for(self, limits: Limits) -> tuple[int, SandboxCgroups | None, Callable[[], object] | None]:
        """The sandbox's sequence number, its cgroups and the blocking set-up left to do before the spawn: the spare
        made ahead when it is ready (limits rewritten when this spec's differ), else new cgroups made then."""
        if not (self.caps.cgroups.limits or self.caps.cgroups.kill):
            return next(_seq), None, None
        spare = self.spare
        if spare is not None and spare.done():
            self.spare = None
            if spare.exception() is None:
                cg = spare.result()
                setup = None if cg.limits == limits else functools.partial(cg.set_limits, limits)
                return int(cg.name.rsplit("-", 1)[1]), cg, setup
        seq = next(_seq)
        cg = SandboxCgroups(self.caps.cgroups, f"{os.getpid()}-{seq}")
        return seq, cg, functools.partial(cg.setup, limits)

    def _make_spare(self, limits: Limits) -> None:
        """Start making the next sandbox's cgroups (dirs, limits, first leaf) on a spawn thread, unless under way.
        Called from close: made during a start, the thread's Python would compete for the GIL on that start's path."""
        if self.spare is None and not self.closing and (self.caps.cgroups.limits or self.caps.cgroups.kill):
            cg = SandboxCgroups(self.caps.cgroups, f"{os.getpid()}-{next(_seq)}")

            def make() -> SandboxCgroups:
                cg.setup(limits)
                return cg

            self.spare = run_blocking(make)

    def _adopt_orphans(self) -> None:
        """Become this process's child subreaper (counted, released by shutdown) once, at the first create: a backend
        that is only made and looked at never changes whom this process's orphans go to, since orphans a subreaper
        adopts after its last reap stay zombies of it."""
        if self._subreaper_asked:
            return
        self._subreaper_asked = True
        self.subreaper = become_subreaper()
        if not self.subreaper:
            self.warnings.append("cannot become a child subreaper: killed sandboxes' processes are reaped by init")

    async def create(self, spec: SandboxSpec, *, key: str, deadline_s: float, on_step: OnStep) -> Handle:
        self._adopt_orphans()
        limits = (spec.memory_mb << 20, spec.pids_max, spec.cpu)
        seq, cgroups, prepare = self._cgroups_for(limits)
        sid = f"{os.getpid()}-{seq}"
        uid = self._uid_block + seq % 100_000 if self.caps.per_sandbox_uid else os.getuid()
        r, w = os.pipe()
        holder: Child | None = None
        self.starting += 1
        try:
            joins = cgroups.planned_dirs(0) if cgroups is not None else []
            payload = self._payload_fd() if self.caps.helper and self.caps.private_tmpfs else None
            bwrap = self._bwrap_argv(spec, w, payload)
            if payload is not None:
                opts = f"size={spec.disk_mb}m,nr_inodes={spec.max_files},mode=0700,uid={uid},gid={uid}"
                argv = [self.caps.helper, "holder", _csv(joins), self._rlimits(spec, spec.lifetime_s * spec.cpu),
                        str(WORK_MOUNT), f"benchbed-{sid}", opts, str(uid), "--", *bwrap]  # fmt: skip
            elif self.caps.private_tmpfs:
                outer = f"{self._join_script(joins)}\n{self._rlimit_script(spec, spec.lifetime_s * spec.cpu)}\n"
                opts = f"size={spec.disk_mb}m,nr_inodes={spec.max_files},mode=0700,uid={uid},gid={uid},nosuid,nodev"
                inner = (f"mount -t tmpfs -o {opts} benchbed-{sid} {WORK_MOUNT} || exit 123\n"
                         f'exec {_drop_to(uid)} "$@"')  # fmt: skip
                outer += 'exec unshare -m --propagation private /bin/sh -c "$0" sh "$@"'
                argv = ["/bin/sh", "-c", outer, inner, *bwrap]
            else:
                outer = f"{self._join_script(joins)}\n{self._rlimit_script(spec, spec.lifetime_s * spec.cpu)}\n"
                drop = f"{_drop_to(uid)} " if self.caps.per_sandbox_uid else ""
                argv = ["/bin/sh", "-c", outer + f'exec {drop}"$@"', "sh", *bwrap]
            on_step("create_sent")
            # The only sandbox starting spawns on the loop thread: a thread hand-off is two wake-ups on its path.
            holder = await Child.spawn(argv, cap=64 * 1024, pass_fds=(w,) if payload is None else (w, payload),
                                       env=HOST_ENV, stdin_pipe=True,
                                       prepare=prepare, inline=self.starting == 1)  # fmt: skip
            os.close(w)
            w = -1
            on_step("started")
            sandbox_pid = await self._wait_ready(holder, r, deadline_s)
        except BaseException as exc:
            if w >= 0:
                os.close(w)
            os.close(r)
            await self._destroy(holder, cgroups, [])
            if isinstance(exc, SandboxFailure | asyncio.CancelledError):
                raise
            if isinstance(exc, OSError):
                raise SandboxFailure("internal", f"cannot set up sandbox {sid}: {exc}", sandbox_id=sid) from exc
            raise
        finally:
            self.starting -= 1
        os.close(r)
        state = LocalState(uid=uid, cgroups=cgroups, holder=holder, sandbox_pid=sandbox_pid, spec=spec)
        handle = Handle(id=sid, backend=self.name, key=key, state=state, warnings=self.warnings)
        loop = asyncio.get_running_loop()
        state.lifetime = loop.call_later(spec.lifetime_s, self._expire, handle)
        self.live[sid] = handle
        return handle

    async def _wait_ready(self, holder: Child, info_r: int, deadline_s: float) -> int:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def on_data(_: bytes) -> None:
            if READY in holder.stdout.data and not ready.done():
                ready.set_result(None)

        holder.stdout.on_data = on_data
        done, _ = await asyncio.wait({ready, holder.exited}, timeout=deadline_s, return_when=asyncio.FIRST_COMPLETED)
        if ready not in done:
            holder.finish_reading()
            if holder.exited in done:
                err = holder.stderr.data.decode(errors="replace").strip()
                rc = holder.exited.result()
                why = {121: "joining cgroups failed", 122: "setting rlimits failed", 123: "mounting tmpfs failed"}
                raise SandboxFailure("internal", f"sandbox exited before ready (rc {rc}: {why.get(rc, err or '?')})")
            raise SandboxFailure("start_timeout", f"sandbox not ready within {deadline_s:.3g}s")
        os.set_blocking(info_r, True)
        raw = b""
        while not raw.rstrip().endswith(b"}"):
            chunk = os.read(info_r, 4096)
            if not chunk:
                break
            raw += chunk
        holder.finish_reading()
        try:
            return int(json.loads(raw)["child-pid"])
        except (ValueError, KeyError) as exc:
            raise SandboxFailure("internal", f"bubblewrap gave no child pid ({raw[:200]!r})") from exc

    def _expire(self, handle: Handle) -> None:
        state: LocalState = handle.state
        state.expired = True
        self._kill_all(state)

    @staticmethod
    def _kill_all(state: LocalState) -> None:
        if state.cgroups is not None:
            state.cgroups.kill()
        state.holder.kill()
        for child in state.execs:
            child.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(state.sandbox_pid, 9)

    # ---- exec ---------------------------------------------------------------------------------------------
    async def exec(
        self, handle: Handle, argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None
    ) -> ExecResult:
        state: LocalState = handle.state
        resolve_command(argv, state.spec)
        if state.holder.exited.done() or state.expired:
            reason = "lifetime_timeout" if state.expired else "lost"
            return ExecResult(exit_code=None, reason=reason, message="sandbox is no longer running")
        if state.payload_pid is None:
            try:
                state.payload_pid = _first_child(state.sandbox_pid)
            except SandboxFailure as exc:
                return ExecResult(exit_code=None, reason=exc.reason, message=exc.message)
        leaf = next(state.leaf)
        cg = state.cgroups
        before = dict(state.counters)
        joins = await run_blocking(cg.leaf_dirs, leaf) if cg is not None else []
        spec = state.spec
        extra = {**spec.env, **(env or {})}
        # The payload process's cwd is the working directory, so -w lands there. The program inherits the env the
        # helpers start with; only a caller-supplied env goes through `env -i`, so no variable of the caller ever
        # configures the host-side helpers (LD_PRELOAD and friends).
        prefix = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in {**SANDBOX_ENV, **extra}.items())] if extra else []
        if self.caps.helper:
            command = [self.caps.helper, "enter", _csv(joins), self._rlimits(spec, timeout_s * spec.cpu + 1),
                       str(state.payload_pid), str(state.uid), "--", *prefix, *argv]  # fmt: skip
        else:
            command = ["/bin/sh", "-c", self._exec_script(state, joins, timeout_s), "sh", *prefix, *argv]
        overflow = {"hit": False}
        child_ref: list[Child] = []

        def on_overflow() -> None:
            overflow["hit"] = True
            if not (cg is not None and cg.kill_leaf(leaf)):
                child_ref[0].kill()

        t0 = time.perf_counter()
        child = await Child.spawn(command, cap=spec.output_limit_bytes, on_overflow=on_overflow, env=SANDBOX_ENV)
        child_ref.append(child)
        state.execs.append(child)
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(child.exited), timeout=timeout_s)
        except asyncio.TimeoutError:
            timed_out = True
            if not (cg is not None and cg.kill_leaf(leaf)):
                child.kill()
            await child.exited
        finally:
            if not child.exited.done():  # cancelled: never leave the command running
                if not (cg is not None and cg.kill_leaf(leaf)):
                    child.kill()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(child.exited)
        rc = child.exited.result()
        child.close()
        state.execs.remove(child)
        if cg is not None and not timed_out and not overflow["hit"]:
            await run_blocking(self._reap_leaf, cg, leaf)
        after = cg.counters() if cg is not None else {}
        state.counters = after
        result = ExecResult(
            exit_code=None if rc < 0 else rc, stdout=bytes(child.stdout.data), stderr=bytes(child.stderr.data),
            truncated=child.stdout.truncated or child.stderr.truncated, wall_s=time.perf_counter() - t0,
        )  # fmt: skip
        if rc < 0:
            result.exit_code = 128 - rc  # killed by signal -rc, reported the shell way
        self._classify(result, rc, before, after, timed_out, overflow["hit"], state, timeout_s)
        return result

    @staticmethod
    def _reap_leaf(cg: SandboxCgroups, leaf: int) -> None:
        """Remove the exec's v2 leaf when nothing is left in it (daemons it started keep it until close)."""
        if cg.v2_dir is None:
            return
        path = cg.v2_dir / f"x{leaf}"
        with contextlib.suppress(OSError):
            path.rmdir()
            cg.leaves.remove(path)

    def _classify(self, res: ExecResult, rc: int, before: dict[str, int], after: dict[str, int], timed_out: bool,
                  overflow: bool, state: LocalState, timeout_s: float) -> None:  # fmt: skip
        oom = after.get("oom_kill", 0) > before.get("oom_kill", 0)
        pids = after.get("pids_max_hits", 0) > before.get("pids_max_hits", 0)
        if state.expired:
            res.reason, res.message = "lifetime_timeout", f"sandbox lifetime of {state.spec.lifetime_s:g}s reached"
        elif oom:
            res.reason, res.limit, res.message = "oom", "memory", f"memory cap {state.spec.memory_mb} MiB reached"
        elif timed_out:
            res.reason, res.limit, res.message = "exec_timeout", "wall", f"exec exceeded {timeout_s:g}s"
        elif overflow:
            res.limit = "output"
            res.message = f"output exceeded {state.spec.output_limit_bytes} bytes; the command was killed"
        elif rc in (-24, 152):
            res.reason, res.limit, res.message = "exec_timeout", "cpu_time", "CPU time limit (RLIMIT_CPU) reached"
        elif rc in (-25, 153):
            res.limit, res.message = "file_size", "file size limit (RLIMIT_FSIZE) reached"
        elif state.holder.exited.done():
            res.reason, res.message = "lost", "the sandbox's init process died during the command"
        if pids:
            res.limit = res.limit or "pids"
            res.message = (res.message + "; " if res.message else "") + f"process cap {state.spec.pids_max} reached"
        if res.limit is None and b"No space left on device" in res.stderr:
            res.limit, res.message = "disk", "working directory full (size or inode cap)"
        if res.limit is None and rc != 0 and any(p in res.stderr for p in _ALLOCATION_FAILED):
            # no OOM kill and no pids event: a thread or an allocation was refused by the address-space rlimit
            res.limit = "address_space"
            res.message = (res.message + "; " if res.message else "") + (
                f"address-space limit (RLIMIT_AS, {state.spec.memory_mb * 2 + 1024} MiB) reached: "
                "a thread or an allocation was refused"
            )

    # ---- close / sweep --------------------------------------------------------------------------------------
    async def close(self, handle: Handle) -> None:
        if handle.closed:
            return
        state: LocalState = handle.state
        if state.lifetime is not None:
            state.lifetime.cancel()
        if state.cgroups is not None and state.cgroups.limits is not None:
            self._make_spare(state.cgroups.limits)  # while this one is torn down, off every start's path
        await self._destroy(state.holder, state.cgroups, list(state.execs), state.sandbox_pid)
        handle.closed = True
        self.live.pop(handle.id, None)

    async def _destroy(self, holder: Child | None, cgroups: SandboxCgroups | None, execs: list[Child],
                       sandbox_pid: int | None = None) -> None:  # fmt: skip
        """Kill every process, wait until none is left (the private tmpfs goes with the last one), rmdir cgroups."""
        if cgroups is not None and cgroups.dirs:
            cgroups.kill()
        if sandbox_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(sandbox_pid, 9)
        for child in [holder, *execs]:
            if child is not None:
                child.kill()
        for child in [holder, *execs]:
            if child is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(child.exited)
                child.close()
        deadline = time.monotonic() + 10
        delay = 0.0005
        while time.monotonic() < deadline:
            busy = cgroups is not None and bool(cgroups.dirs) and cgroups.populated()
            if busy:
                cgroups.kill()
            if self.subreaper:
                # Orphans of the killed sandbox are our children now; its pid 1 exits only once they are reaped.
                reap_orphans(UID_BASE, UID_BASE + 100_000_000)
                busy = busy or not _reaped(sandbox_pid)
            if not busy:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        if cgroups is not None and cgroups.dirs:
            left = await run_blocking(cgroups.remove)
            if left:
                raise SandboxFailure("internal", f"sandbox cgroups not released: {'; '.join(left)}")

    async def sweep(self, *, final: bool = False) -> int:
        count = 0
        if final:
            self.closing = True
            if self.spare is not None:  # let it land, so that the sweep below removes it
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.spare)
                self.spare = None
            for handle in list(self.live.values()):
                with contextlib.suppress(SandboxFailure):
                    await self.close(handle)
                count += 1
        if self.caps.cgroups.limits or self.caps.cgroups.kill:
            count += sweep(self.caps.cgroups, include_self=final)
            if final:
                remove_parents(self.caps.cgroups)
        return count

    async def shutdown(self) -> None:
        await self.sweep(final=True)
        if self.payload_fd is not None:
            os.close(self.payload_fd)
            self.payload_fd = None
        if self.subreaper:
            reap_orphans(UID_BASE, UID_BASE + 100_000_000)
            release_subreaper()
            self.subreaper = False
        self._subreaper_asked = False
