"""RunRecord (docs/reference/store.md): what a run was, where it ran, how it ended, and its metrics. Versioned JSON."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import benchbed
from benchbed.errors import BenchbedError
from benchbed.gate import DEFAULT_ALPHA, DEFAULT_BAND_SD, DEFAULT_MIN_EFFECT, DEFAULT_NIGHTS

FORMAT_VERSION = 1
MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RunStatus = Literal["started", "succeeded", "failed", "partial"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricValue(_Model):
    value: float
    unit: str
    higher_is_better: bool | None = None
    # what the figure was computed from: timed spans, timed samples (GPU points), per-step aggregates, or the
    # framework's own figure
    source: Literal["span", "point", "agg", "framework"] = "span"


class AdapterInfo(_Model):
    name: str
    framework: str = ""
    version: str = ""
    mode: str = ""


class BenchbedInfo(_Model):
    version: str
    commit: str = ""
    dirty: bool = False


class GPUInfo(_Model):
    model: str
    count: int
    driver: str = ""


class MachineInfo(_Model):
    name: str
    host: str
    os: str
    cpu: str
    cpu_count: int
    memory_gib: float | None = None
    python: str
    gpus: list[GPUInfo] = Field(default_factory=list)


class ErrorInfo(_Model):
    message: str
    exit_code: int | None = None
    log_tail: str = ""


class Gate(_Model):
    """How a night of a suite entry is judged against the nights before it (benchbed.nightly.stats)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # nan/inf is no significance level or effect

    nights: int = Field(DEFAULT_NIGHTS, gt=0, description="previous nights whose points form the baseline")
    alpha: float = Field(DEFAULT_ALPHA, gt=0, lt=1, description="significance level of the two-sided rank test")
    min_effect: float = Field(DEFAULT_MIN_EFFECT, ge=0, description="minimum relative change of the median")
    band: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict,
        description="metrics judged against the reference band of the trusted nights instead of the rank test, "
        "each with the band's least half-width relative to the reference mean (e.g. {final_reward_mean = 0.1})",
    )
    band_sd: float = Field(DEFAULT_BAND_SD, gt=0, description="the band's half-width in reference standard deviations")


class LaunchInfo(_Model):
    """The scheduler job a run became (absent for a plain local subprocess): id, version, nodes, final state."""

    scheduler: str = Field(description="ray, slurm, or the name a site launcher gives its scheduler")
    submitted_by: str = Field("benchbed", description="benchbed, or the framework that submitted its own job")
    job_id: str = ""
    address: str = Field("", description="Ray dashboard URL or Slurm cluster name")
    version: str = Field("", description="Ray or Slurm version")
    nodes: list[str] = Field(default_factory=list)
    state: str = Field("", description="final state in the scheduler's words, e.g. SUCCEEDED, STOPPED, CANCELLED")


class SuiteInfo(_Model):
    """Where a run sits in a suite: its series is (machine, entry); `night` groups one invocation's repeats."""

    name: str
    entry: str
    night: str
    watch: list[str] = Field(default_factory=list)
    gate: Gate = Field(default_factory=Gate)


class RunRecord(_Model):
    format_version: int = FORMAT_VERSION
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: RunStatus = "started"
    spec: dict[str, Any]
    spec_id: str
    adapter: AdapterInfo
    benchbed: BenchbedInfo
    machine: MachineInfo
    launcher: str = "local"
    launch: LaunchInfo | None = None
    repeat: int = 0
    suite: SuiteInfo | None = None
    started_at: str = Field(default_factory=lambda: utc_now().isoformat())
    finished_at: str | None = None
    duration_s: float | None = None
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    trace_events: int | None = None
    warnings: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _git(*args: str) -> str:
    root = Path(benchbed.__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def benchbed_info() -> BenchbedInfo:
    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no")) if commit else False
    return BenchbedInfo(version=benchbed.__version__, commit=commit, dirty=dirty)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _gpus() -> list[GPUInfo]:
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    counts: dict[tuple[str, str], int] = {}
    for line in out.stdout.strip().splitlines():
        name, _, driver = (p.strip() for p in line.partition(","))
        counts[(name, driver)] = counts.get((name, driver), 0) + 1
    return [GPUInfo(model=n, driver=d, count=c) for (n, d), c in counts.items()]


def machine_info() -> MachineInfo:
    """Describe this host; `name` (BENCHBED_MACHINE or the hostname) keys the results layout."""
    host = socket.gethostname()
    name = os.environ.get("BENCHBED_MACHINE") or ""
    if name and not MACHINE_NAME.fullmatch(name):  # it names a directory of the store: never `..`, never a path
        raise BenchbedError(
            f"BENCHBED_MACHINE={name!r} is not a machine name; expected letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names the machine's directory in the store)"
        )
    name = name or "".join(c if c.isalnum() or c in "._-" else "-" for c in host).lstrip("._-") or "localhost"
    return MachineInfo(
        name=name,
        host=host,
        os=f"{platform.system()} {platform.release()}",
        cpu=_cpu_model(),
        cpu_count=os.cpu_count() or 1,
        memory_gib=_memory_gib(),
        python=platform.python_version(),
        gpus=_gpus(),
    )
