"""What the local sandbox can enforce on this host, detected once at start-up and reported by `sandbox doctor`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchbed.errors import BenchbedError
from benchbed.sandbox.cgroups import CgroupLayout, detect_layout
from benchbed.sandbox.helper import build as build_helper

BWRAP_PACKAGE = "bubblewrap"
WORK_MOUNT = Path("/run/benchbed/work")


class SandboxUnavailable(BenchbedError):
    """The local sandbox cannot run on this host at all (e.g. bubblewrap missing)."""


@dataclass
class LocalCapabilities:
    bwrap: str
    bwrap_version: str
    root: bool
    tools: dict[str, str]
    cgroups: CgroupLayout
    private_tmpfs: bool
    per_sandbox_uid: bool
    helper: str | None = None
    warnings: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, str, str]]:
        """(capability, state, detail) for the doctor table."""
        lim = self.cgroups.limits
        rows = [
            ("bubblewrap", "ok", f"{self.bwrap} ({self.bwrap_version})"),
            ("namespaces", "ok", "user, mount, pid, net, ipc, uts, cgroup unshared; nested user namespaces disabled"),
            ("network", "ok", "private network namespace with loopback only"),
        ]
        for ctrl in ("memory", "pids", "cpu"):
            where = lim.get(ctrl)
            rows.append((f"cgroup {ctrl}", "ok" if where else "degraded",
                         f"cgroup {where[0]} at {where[1]}" if where else "rlimit floor only"))  # fmt: skip
        rows.append(
            (
                "whole-tree kill",
                "ok" if self.cgroups.kill else "degraded",
                "cgroup v2 cgroup.kill" if self.cgroups.kill else "pid-namespace teardown and per-pid SIGKILL",
            )
        )
        rows.append(("workdir caps", "ok" if self.private_tmpfs else "degraded",
                     "tmpfs size + nr_inodes in a private mount namespace" if self.private_tmpfs
                     else "bwrap tmpfs size only; no inode cap"))  # fmt: skip
        rows.append(("separate uid", "ok" if self.per_sandbox_uid else "degraded",
                     "one unprivileged host uid per sandbox (RLIMIT_NPROC per sandbox)" if self.per_sandbox_uid
                     else "runs as the calling user"))  # fmt: skip
        rows.append(("rlimits", "ok", "NOFILE, FSIZE, CPU, AS, NPROC"))
        rows.append(
            (
                "spawn helper",
                "ok" if self.helper else "degraded",
                f"compiled helper {self.helper}" if self.helper else "sh/unshare/mount/nsenter chains (slower)",
            )
        )
        return rows


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or out.stderr.strip() or "unknown"


def _bwrap_works(bwrap: str) -> str | None:
    """Run a trivial sandbox; None when it works, else bwrap's message."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
            "--proc", "/proc", "--dev", "/dev", "/usr/bin/true"]  # fmt: skip
    if Path("/usr/lib64").exists():
        argv[-1:-1] = ["--symlink", "usr/lib64", "/lib64"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if out.returncode == 0 else (out.stderr.strip() or f"exit code {out.returncode}")


_cache: LocalCapabilities | None = None


def detect(refresh: bool = False) -> LocalCapabilities:
    """Detect (once per process) what the local backend can use; raise SandboxUnavailable if it cannot run."""
    global _cache
    if _cache is not None and not refresh:
        return _cache
    bwrap = os.environ.get("BENCHBED_BWRAP") or shutil.which("bwrap")
    if not bwrap or not os.access(bwrap, os.X_OK):
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed; install the Debian/Ubuntu package "
            f"'{BWRAP_PACKAGE}' (apt-get install {BWRAP_PACKAGE}) or use --backend modal|prime"
        )
    failure = _bwrap_works(bwrap)
    if failure:
        raise SandboxUnavailable(
            f"bubblewrap at {bwrap} cannot create a sandbox here: {failure}. Unprivileged user namespaces must be "
            "allowed (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)"
        )
    warnings: list[str] = []
    root = os.geteuid() == 0
    tools = {t: p for t in ("unshare", "mount", "nsenter", "env") if (p := shutil.which(t))}
    if "nsenter" not in tools or "env" not in tools:
        raise SandboxUnavailable("nsenter and env (util-linux, coreutils) are needed to run commands in a sandbox")
    if root:
        layout, cg_warn = detect_layout()
        warnings += cg_warn
    else:
        layout = CgroupLayout(v2=None, limits={}, kill=False, swap_accounting=False)
        warnings.append("not running as root: no cgroup limits (memory, pids, cpu are rlimits only)")
    private_tmpfs = root and "unshare" in tools and "mount" in tools
    if private_tmpfs:
        try:
            WORK_MOUNT.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            private_tmpfs = False
            warnings.append(f"cannot create {WORK_MOUNT} ({exc}); working directory has no inode cap")
    elif root:
        warnings.append("unshare/mount missing: the working directory has a size cap but no inode cap")
    else:
        warnings.append("not running as root: the working directory has a size cap but no inode cap")
    per_uid = root and "unshare" in tools
    if root and not per_uid:
        raise SandboxUnavailable("unshare (util-linux) is needed when benchbed runs as root, to drop to a sandbox uid")
    version = _version(bwrap)
    match = re.search(r"(\d+)\.(\d+)", version)
    if match and (int(match[1]), int(match[2])) < (0, 8):
        raise SandboxUnavailable(f"bubblewrap {version} is too old; 0.8 or newer is needed (--disable-userns)")
    helper = None
    if root and private_tmpfs and per_uid:
        built, why = build_helper()
        helper = str(built) if built else None
        if why:
            warnings.append(why)
    _cache = LocalCapabilities(bwrap, version, root, tools, layout, private_tmpfs, per_uid, helper, warnings)
    return _cache
