"""Fixtures for the conformance suite: each adapter's own runs, and a third-party adapter from outside the tree."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from benchbed import adapter as registry
from benchbed.spec import build_spec

from . import outside
from .own_fixtures import GENERATED, committed


def _sim_run(root: Path) -> Path:
    from benchbed.sim import simulate_spec

    spec = build_spec({"name": "conformance", "adapter": "sim", "workload": {"steps": 6, "prompts_per_step": 2,
                       "group_size": 4, "max_staleness": 1}, "sim": {"concurrency": 8, "latency": 2.0}})  # fmt: skip
    run = root / "sim-run"
    run.mkdir()
    simulate_spec(spec).write(run)
    return run


def _sandbox_run(root: Path) -> Path:
    from benchbed.adapters.sandbox_bench import CONFIG_FILE

    from benchbed.sandbox.bench import BenchConfig, main

    if shutil.which("bwrap") is None and not os.environ.get("CI"):
        pytest.skip("bubblewrap is not installed: no sandbox-bench run to check (a failure under CI)")
    run = root / "sandbox-run"
    run.mkdir()
    (run / CONFIG_FILE).write_text(BenchConfig(levels=[1, 2], program=["/bin/true"], baseline=False).model_dump_json())
    assert main(["--config", str(run / CONFIG_FILE), "--out", str(run)]) == 0
    return run


@pytest.fixture(scope="session")
def own_runs(tmp_path_factory: pytest.TempPathFactory):
    """adapter name -> its runs; generated ones are made on first use."""
    made: dict[str, list[Path]] = {}

    def runs(adapter: str) -> list[Path]:
        if adapter not in made:
            root = tmp_path_factory.mktemp(f"runs-{adapter}")
            made[adapter] = [{"sim": _sim_run, "sandbox": _sandbox_run}[adapter](root)] if adapter in GENERATED \
                else committed(adapter)  # fmt: skip
        return made[adapter]

    return runs


@pytest.fixture
def outsider_site(tmp_path, monkeypatch):
    """The outsider adapter registered in this process (sys.path) and dropped again afterwards."""
    site = outside.build(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    yield site
    registry._loaded.pop(outside.NAME, None)
    sys.modules.pop(outside.PACKAGE, None)
