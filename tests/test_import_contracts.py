"""The plug-in contract in pyproject.toml forbids every module of benchbed but api and adapterkit: a module added to
benchbed must be added to its list, or plug-ins could import it unchecked."""

from __future__ import annotations

import pkgutil
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


ROOT = Path(__file__).resolve().parents[1]
PLUGIN_CONTRACT = "plug-ins import benchbed only through benchbed.api and benchbed.adapterkit"


def test_plugin_contract_forbids_every_module_but_api_and_adapterkit() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"] == PLUGIN_CONTRACT]
    modules = {f"benchbed.{m.name}" for m in pkgutil.iter_modules([str(ROOT / "benchbed")])}
    assert "benchbed.trace" in modules and "benchbed.adapters" not in modules
    assert set(contract["forbidden_modules"]) == modules - {"benchbed.api", "benchbed.adapterkit"}
