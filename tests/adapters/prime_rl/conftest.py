"""Shared paths and the fixture generator module (tests/fixtures/prime_rl/generate.py) for the prime-rl tests."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "prime_rl"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prime_rl_fixture_generator", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def gen() -> ModuleType:
    """The fixture generator: its constants are the expected numbers."""
    return _load_generator()


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def run_copy(tmp_path: Path):
    """Copy a fixture run directory into tmp_path so a test can damage it."""

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(FIXTURES / name, dest, symlinks=True)
        return dest

    return copy
