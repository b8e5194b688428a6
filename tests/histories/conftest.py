"""Histories written by the real trackers, in child processes, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WRITER = Path(__file__).with_name("wandb_writer.py")
OFFLINE_ENV = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_ERROR_REPORTING": "false",
               "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off"}  # fmt: skip


def write_offline_run(spec: dict[str, Any], workdir: Path, argv: tuple[str, ...] = ()) -> Path:
    """A real W&B offline run written by wandb_writer.py from `spec` (`argv`: more command-line arguments, which
    wandb records in wandb-metadata.json); returns its run directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec_file = workdir / "spec.json"
    spec_file.write_text(json.dumps({"dir": str(workdir), **spec}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")} | OFFLINE_ENV
    done = subprocess.run([sys.executable, str(WRITER), str(spec_file), *argv], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"wandb writer failed: {done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def wandb_run() -> Callable[[dict[str, Any], Path], Path]:
    pytest.importorskip("wandb", reason="the `wandb` extra is not installed: pip install 'benchbed[wandb]'")
    return write_offline_run
