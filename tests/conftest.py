"""Settings for the whole suite.

Hypothesis profiles: `make test` draws the same examples on every run (derandomized, no example database), so CI
cannot fail on a case no earlier run drew; `make fuzz` (BENCHBED_HYPOTHESIS_PROFILE=fuzz) draws new ones, many more.

SIGINT: a shell starts a background job (`make test &`, `nohup ... &`) with SIGINT ignored, and a process inherits
that through exec, so the benchbed children of the Ctrl-C tests would ignore the SIGINT they are sent. The suite
handles SIGINT as a foreground process does, and its children start with the default.

`benchbed` runs the command in this process through click's runner (no interpreter start-up, no re-import per call);
`benchbed_process` runs it as a child, for the tests where a real process is the point (exit through the process's
own end, signals, inherited descriptors). Both answer with a `subprocess.CompletedProcess`: returncode, stdout,
stderr.

`make test` runs the suite on two pytest-xdist workers (`-n 2`) with the scheduler below: the tests under
tests/launch/ (Ray heads, the test Slurm, the verl launches) form one group, `machine`, and the TRL-vLLM launches
another, `vllm`; a group runs one test at a time on one worker, as its memory and its schedulers need, and every
other test is independent of the others. (Groups by node id: pytest 9.2 node ids cannot carry xdist's
`xdist_group` suffix.)

No test may leave its worker a child subreaper (a sandbox backend that created a sandbox and was never shut down):
the orphans of a later test's killed process would then stay zombies of the worker, and every sandbox leak check
after it on that worker would fail."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping

import pytest
from click.testing import CliRunner
from hypothesis import settings

Benchbed = Callable[..., subprocess.CompletedProcess[str]]

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("BENCHBED_HYPOTHESIS_PROFILE", "ci"))


def _in_process(*args: object, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`benchbed ARGS` through click's runner; `env` is added to this process's environment for the call only."""
    from benchbed.cli.main import cli

    argv = [str(arg) for arg in args]
    result = CliRunner().invoke(cli, argv, prog_name="benchbed", env=dict(env or {}), catch_exceptions=False)
    return subprocess.CompletedProcess(["benchbed", *argv], result.exit_code, result.stdout, result.stderr)


def _child(
    *args: object, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m benchbed ARGS` as a child process; `env` is added to this process's environment."""
    return subprocess.run([sys.executable, "-m", "benchbed", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="session")
def benchbed() -> Benchbed:
    """The `benchbed` command run in this process: `benchbed("ingest", path, "--store", store)`."""
    return _in_process


@pytest.fixture(scope="session")
def benchbed_process() -> Benchbed:
    """The `benchbed` command run as a child process, where a real process is the point."""
    return _child


SERIAL_GROUPS = (  # node-id prefix -> group: the tests of a group run one at a time on one worker
    ("tests/launch/test_trl_vllm_cpu.py", "vllm"),  # one vLLM at a time, beside the machine group
    ("tests/launch/", "machine"),  # the Ray heads, the test Slurm, the verl launches and their options
)


def _group(nodeid: str) -> str:
    """The test's group: its serial group, or the test itself (any worker, any time)."""
    return next((group for prefix, group in SERIAL_GROUPS if nodeid.startswith(prefix)), nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's load-by-scope scheduler with the scopes of `_group`: the largest groups are sent first, each to one
    worker, and the single tests fill the other worker and the gaps (see the module docstring)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return GroupScheduling(config, log)  # type: ignore[arg-type]


_LIBC = ctypes.CDLL(None, use_errno=True)


def _is_child_subreaper() -> bool:
    """Whether this process adopts its orphaned descendants (Linux PR_GET_CHILD_SUBREAPER)."""
    flag = ctypes.c_int(0)
    _LIBC.prctl(37, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


@pytest.fixture(autouse=True)
def no_subreaper_left() -> object:
    """Fail the test that leaves this worker a child subreaper (see the module docstring)."""
    yield
    assert not _is_child_subreaper(), "the test left this process a child subreaper: shut its sandbox backend down"


@pytest.fixture(scope="session")
def is_child_subreaper() -> Callable[[], bool]:
    """Whether this process is a child subreaper now."""
    return _is_child_subreaper
