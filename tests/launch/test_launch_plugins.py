"""Launchers and sandbox backends are plug-ins like adapters: a package that names a class in the
`benchbed.launchers` or `benchbed.sandbox_backends` entry-point group adds one, with no edit to benchbed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchbed.errors import LaunchError, SpecError
from benchbed.launch.base import available_launchers, get_launcher
from benchbed.sandbox.registry import BackendUnavailable, available_backends, get_backend
from benchbed.spec import build_spec

ROOT = Path(__file__).resolve().parents[2]

SITE = '''
"""A site's own launcher and sandbox backend, knowing benchbed only through its public contracts."""

from pathlib import Path

from benchbed.launch.base import Launcher
from benchbed.launch.local import run_plan
from benchbed.record import LaunchInfo
from benchbed.sandbox.local import LocalBackend


class QueueLauncher(Launcher):
    """Runs the plan here, as if a site queue had placed it, and records the queue's job."""

    name = "queue"

    def __init__(self, queue: str = "default") -> None:
        self.queue = queue

    def preflight(self, spec, plan, run_dir):
        if spec.workload.steps > 1000:
            from benchbed.errors import LaunchError

            raise LaunchError(f"the {self.queue} queue takes at most 1000 steps")

    def describe(self, spec, plan, run_dir):
        return [f"# queue job: {self.queue} <- {plan.argv[0]}"]

    def launch(self, spec, plan, run_dir, timeout_s=None, on_line=None):
        result = run_plan(plan, run_dir, timeout_s=timeout_s, on_line=on_line)
        result.info = LaunchInfo(scheduler="queue", job_id=f"{self.queue}-1", state="DONE")
        (Path(run_dir) / "queued.txt").write_text(self.queue)
        return result


class SiteBackend(LocalBackend):
    """The local backend under a site's name (a stand-in for a provider such as E2B)."""

    name = "site"
'''


def _site(root: Path) -> Path:
    """Write the package and a .dist-info naming its classes in both groups; returns the directory for sys.path."""
    (root / "site_plugins").mkdir(parents=True)
    (root / "site_plugins" / "__init__.py").write_text(textwrap.dedent(SITE))
    info = root / "site_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: site-plugins\nVersion: 0.1\n")
    groups = "[benchbed.launchers]\nqueue = site_plugins:QueueLauncher\n\n"
    groups += "[benchbed.sandbox_backends]\nsite = site_plugins:SiteBackend\n"
    (info / "entry_points.txt").write_text(groups)
    return root


def test_built_in_launchers_and_backends_are_registered() -> None:
    assert {"local", "ray", "slurm"} <= set(available_launchers())
    assert {"local", "modal", "prime"} <= set(available_backends())
    with pytest.raises(LaunchError, match=r"^unknown launcher 'slurn'; did you mean 'slurm'\?"):
        get_launcher("slurn")
    with pytest.raises(BackendUnavailable, match=r"^unknown sandbox backend 'modl'; did you mean 'modal'\?"):
        get_backend("modl")


def test_a_site_backend_is_found_by_name_and_accepted_by_specs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path)))
    assert type(get_backend("site")).__name__ == "SiteBackend"
    spec = build_spec({"name": "x", "adapter": "sandbox", "sandbox": {"backend": "site"}})
    assert spec.sandbox.backend == "site"
    with pytest.raises(SpecError, match=r"field 'sandbox.backend': expected one of 'none', 'local', .*'site'"):
        build_spec({"name": "x", "adapter": "sandbox", "sandbox": {"backend": "e2b"}})


def test_benchbed_run_goes_through_a_site_launcher(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    store = tmp_path / "results"
    spec = str(ROOT / "experiments" / "quickstart.toml")
    argv = [sys.executable, "-m", "benchbed", "run", spec, "--set", "workload.steps=8", "--launcher", "queue",
            "--store", str(store)]  # fmt: skip
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "succeeded" and record["launcher"] == "queue"
    assert record["launch"]["scheduler"] == "queue" and record["launch"]["job_id"] == "default-1"
    assert record["metrics"]["trainer_throughput_sps"]["value"] > 0
    assert [p.read_text() for p in store.rglob("queued.txt")] == ["default"]
    dry = subprocess.run([*argv, "--dry-run"], capture_output=True, text=True, env=env, timeout=300)
    assert dry.returncode == 0 and f"# queue job: default <- {sys.executable}" in dry.stdout, dry.stderr
    refused = subprocess.run([*argv[:6], "workload.steps=2000", *argv[7:]], capture_output=True, text=True,
                             env=env, timeout=300)  # fmt: skip
    assert refused.returncode == 2 and "the default queue takes at most 1000 steps" in refused.stderr
    assert len(list(store.rglob("record.json"))) == 1, "the refused run stored nothing"
    unknown = subprocess.run(
        [*argv[:7], "--launcher", "queu", *argv[9:]], capture_output=True, text=True, env=env, timeout=300
    )
    assert unknown.returncode == 2 and "unknown launcher 'queu'; did you mean 'queue'?" in unknown.stderr
