"""Per-sandbox cgroups on v2, v1 or a hybrid layout: limits, whole-tree kill, emptiness, failure counters."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.liveness import pid_alive

PARENT = "benchbed"
LIMIT_CONTROLLERS = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class CgroupLayout:
    """Where each controller lives: `limits` maps memory/pids/cpu to ("v1"|"v2", mount); `v2` also gives kill."""

    v2: Path | None
    limits: dict[str, tuple[str, Path]]
    kill: bool
    swap_accounting: bool

    @property
    def v1_dirs(self) -> list[Path]:
        return sorted({m for ver, m in self.limits.values() if ver == "v1"})


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fstype, super options) from /proc/self/mountinfo."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) >= 5 and len(rfields) >= 3:
                out.append((fields[4], rfields[0], rfields[2].split(",")))
    return out


def _writable_parent(mount: Path) -> bool:
    """Create <mount>/benchbed if needed; True when we may make children there."""
    parent = mount / PARENT
    try:
        parent.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(parent, os.W_OK)


def detect_layout() -> tuple[CgroupLayout, list[str]]:
    """Find usable cgroup controllers (v2 first, v1 for what v2 lacks); warnings name what is missing."""
    warnings: list[str] = []
    v2: Path | None = None
    v1: dict[str, Path] = {}
    for point, fstype, opts in _mounts():
        if fstype == "cgroup2" and v2 is None:
            v2 = Path(point)
        elif fstype == "cgroup":
            for ctrl in LIMIT_CONTROLLERS:
                if ctrl in opts and ctrl not in v1:
                    v1[ctrl] = Path(point)
    limits: dict[str, tuple[str, Path]] = {}
    kill = False
    if v2 is not None and _writable_parent(v2):
        kill = (v2 / PARENT / "cgroup.kill").exists()
        ctrl_file = v2 / "cgroup.controllers"
        available = set(ctrl_file.read_text().split()) if ctrl_file.exists() else set()
        wanted = [c for c in LIMIT_CONTROLLERS if c in available]
        if wanted:
            try:
                _enable(v2, wanted)
                _enable(v2 / PARENT, wanted)
                for ctrl in wanted:
                    limits[ctrl] = ("v2", v2)
            except OSError as exc:
                warnings.append(f"cgroup v2 controllers {wanted} present but cannot be enabled ({exc})")
    elif v2 is not None:
        warnings.append(f"cgroup v2 at {v2} is not writable; no whole-tree kill through cgroup.kill")
    for ctrl in LIMIT_CONTROLLERS:
        if ctrl in limits:
            continue
        mount = v1.get(ctrl)
        if mount is not None and _writable_parent(mount):
            limits[ctrl] = ("v1", mount)
        else:
            warnings.append(f"no usable cgroup {ctrl} controller (v2 or v1); {ctrl} is limited by rlimits only")
    if not kill:
        warnings.append("cgroup.kill unavailable; close kills the sandbox's pid namespace and its known processes")
    swap = False
    if limits.get("memory", ("", None))[0] == "v1":
        swap = (limits["memory"][1] / PARENT / "memory.memsw.limit_in_bytes").exists()
    elif "memory" in limits:
        swap = True
    return CgroupLayout(v2=v2 if kill or any(v == "v2" for v, _ in limits.values()) else None, limits=limits,
                        kill=kill, swap_accounting=swap), warnings  # fmt: skip


def _enable(cg: Path, controllers: list[str]) -> None:
    current = set((cg / "cgroup.subtree_control").read_text().split())
    missing = [c for c in controllers if c not in current]
    if missing:
        (cg / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _mkdir(path: Path, v2_controllers: list[str]) -> None:
    """mkdir a sandbox cgroup; re-create the shared parent if another harness's final sweep just removed it."""
    try:
        path.mkdir()
    except FileNotFoundError:
        path.parent.mkdir(exist_ok=True)
        if v2_controllers:
            _enable(path.parent, v2_controllers)
        path.mkdir()


def remove_parents(layout: CgroupLayout) -> None:
    """rmdir the shared benchbed parents when empty (another live harness keeps them busy: that is fine)."""
    for mount in ([layout.v2] if layout.v2 else []) + layout.v1_dirs:
        with contextlib.suppress(OSError):
            (mount / PARENT).rmdir()


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


Limits = tuple[int, int, float]  # memory bytes, pids, cpu cores


@dataclass
class SandboxCgroups:
    """The cgroups of one sandbox: v1 dirs per controller, one v2 dir with a leaf per process group (x0, x1 ...)."""

    layout: CgroupLayout
    name: str
    dirs: list[Path] = field(default_factory=list)
    leaves: list[Path] = field(default_factory=list)
    v2_dir: Path | None = None
    limits: Limits | None = None

    def make_dirs(self) -> None:
        """mkdir the sandbox's directories (each v1 controller's, the v2 one with controllers enabled)."""
        lay = self.layout
        v2_ctrls = [c for c, (ver, _) in lay.limits.items() if ver == "v2"]
        if lay.v2 is not None:
            self.v2_dir = lay.v2 / PARENT / self.name
            _mkdir(self.v2_dir, v2_ctrls)
            self.dirs.append(self.v2_dir)
            if v2_ctrls:
                _enable(self.v2_dir, v2_ctrls)
        for mount in lay.v1_dirs:
            d = mount / PARENT / self.name
            _mkdir(d, [])
            self.dirs.append(d)

    def set_limits(self, limits: Limits) -> None:
        """Write memory (and swap), pids and cpu caps; before any process joins."""
        memory_bytes, pids_max, cpu = limits
        lay = self.layout
        for ctrl, (ver, mount) in lay.limits.items():
            d = self.v2_dir if ver == "v2" else mount / PARENT / self.name
            assert d is not None
            if ctrl == "memory" and ver == "v1":
                _write(d / "memory.limit_in_bytes", str(memory_bytes))
                if lay.swap_accounting:
                    _write(d / "memory.memsw.limit_in_bytes", str(memory_bytes))
            elif ctrl == "memory":
                _write(d / "memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(d / "memory.swap.max", "0")
            elif ctrl == "pids":
                _write(d / "pids.max", str(pids_max))
            elif ctrl == "cpu" and ver == "v1":
                _write(d / "cpu.cfs_period_us", "100000")
                _write(d / "cpu.cfs_quota_us", str(max(1000, int(cpu * 100000))))
            elif ctrl == "cpu":
                _write(d / "cpu.max", f"{max(1000, int(cpu * 100000))} 100000")
        self.limits = limits

    def setup(self, limits: Limits) -> list[Path]:
        """make_dirs(), set_limits() and the first leaf, in one blocking call; returns the dirs to join."""
        self.make_dirs()
        self.set_limits(limits)
        return self.leaf_dirs(0)

    def planned_dirs(self, leaf: int) -> list[Path]:
        """The directories setup() will create for `leaf` (each v1 dir, the v2 leaf), known before anything is."""
        dirs = [m / PARENT / self.name for m in self.layout.v1_dirs]
        if self.layout.v2 is not None:
            dirs.append(self.layout.v2 / PARENT / self.name / f"x{leaf}")
        return dirs

    def leaf_dirs(self, leaf: int) -> list[Path]:
        """The directories a process group must join: each v1 dir, and the v2 leaf `x<leaf>` (created here)."""
        dirs = [d for d in self.dirs if d != self.v2_dir]
        if self.v2_dir is not None:
            path = self.v2_dir / f"x{leaf}"
            path.mkdir()
            self.leaves.append(path)
            dirs.append(path)
        return dirs

    def kill_leaf(self, leaf: int) -> bool:
        if self.v2_dir is None or not self.layout.kill:
            return False
        with contextlib.suppress(OSError):
            _write(self.v2_dir / f"x{leaf}" / "cgroup.kill", "1")
            return True
        return False

    def kill(self) -> None:
        """Kill every process of the sandbox (cgroup.kill, else SIGKILL to each pid listed, repeatedly)."""
        if self.v2_dir is not None and self.layout.kill:
            with contextlib.suppress(OSError):
                _write(self.v2_dir / "cgroup.kill", "1")
                return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)

    def pids(self) -> list[int]:
        out: set[int] = set()
        paths = [d / "cgroup.procs" for d in self.dirs if d != self.v2_dir]
        paths += [leaf / "cgroup.procs" for leaf in self.leaves]
        for path in paths:
            with contextlib.suppress(OSError):
                out.update(int(x) for x in path.read_text().split())
        return sorted(out)

    def populated(self) -> bool:
        """Any process left? Every sandbox process joins the v2 leaf, so v2's flag is enough where it exists."""
        if self.v2_dir is not None:
            with contextlib.suppress(OSError):
                for line in (self.v2_dir / "cgroup.events").read_text().splitlines():
                    if line.startswith("populated "):
                        return line.endswith(" 1")
        return bool(self.pids())

    def counters(self) -> dict[str, int]:
        """oom_kill and pids_max_hits where the layout exposes them (cumulative over the sandbox's life)."""
        out: dict[str, int] = {}
        for ctrl, (ver, mount) in self.layout.limits.items():
            d = self.v2_dir if ver == "v2" else mount / PARENT / self.name
            if d is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                if ctrl == "memory" and ver == "v1":
                    for line in (d / "memory.oom_control").read_text().splitlines():
                        if line.startswith("oom_kill "):
                            out["oom_kill"] = int(line.split()[1])
                elif ctrl == "memory":
                    for line in (d / "memory.events").read_text().splitlines():
                        if line.startswith("oom_kill "):
                            out["oom_kill"] = int(line.split()[1])
                elif ctrl == "pids":
                    for line in (d / "pids.events").read_text().splitlines():
                        if line.startswith("max "):
                            out["pids_max_hits"] = int(line.split()[1])
        return out

    def remove(self, timeout_s: float = 5.0) -> list[str]:
        """rmdir leaves then sandbox dirs, retrying EBUSY while the kernel finishes releasing; returns leftovers."""
        deadline = time.monotonic() + timeout_s
        left: list[str] = []
        for path in [*self.leaves, *self.dirs]:
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        left.append(f"{path}: {exc.strerror}")
                        break
                    time.sleep(0.002)
        return left


def sweep(layout: CgroupLayout, *, include_self: bool = False) -> int:
    """Kill and remove sandbox cgroups whose owning harness (the pid in the name) is gone, and this process's own
    when `include_self`; returns how many sandboxes were swept."""
    mounts = ([layout.v2] if layout.v2 else []) + layout.v1_dirs
    swept: set[str] = set()
    me = os.getpid()
    for mount in mounts:
        parent = mount / PARENT
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            owner = d.name.split("-", 1)[0]
            if not d.is_dir() or not owner.isdigit():
                continue
            if not ((include_self and int(owner) == me) or (int(owner) != me and not pid_alive(int(owner)))):
                continue
            with contextlib.suppress(OSError):
                if (d / "cgroup.kill").exists():
                    _write(d / "cgroup.kill", "1")
            for pid_file in [d / "cgroup.procs", *d.glob("*/cgroup.procs")]:
                with contextlib.suppress(OSError, ValueError):
                    for pid in pid_file.read_text().split():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), 9)
            cg = SandboxCgroups(layout, d.name)
            cg.leaves = [c for c in d.iterdir() if c.is_dir()]
            cg.dirs = [d]
            cg.remove(timeout_s=2.0)
            swept.add(d.name)
    return len(swept)
