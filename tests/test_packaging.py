"""What pyproject.toml promises: extras that install only what their feature needs, and a pytest configuration
that raises no warning of its own whichever plugins happen to be installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def requirement_names(extra: str) -> set[str]:
    names = set()
    for requirement in PROJECT["project"]["optional-dependencies"][extra]:
        head = requirement.split(";")[0].split("[")[0]
        names.add(head.split("=")[0].split(">")[0].split("<")[0].strip().lower())
    return names


def test_tensorboard_has_its_own_extra_without_torch() -> None:
    assert requirement_names("tensorboard") == {"tensorboard", "google-crc32c"}  # the reader and its record checksums
    holding = [
        extra for extra in PROJECT["project"]["optional-dependencies"] if "tensorboard" in requirement_names(extra)
    ]
    assert holding == ["tensorboard"]  # reading event files never pulls torch in


def test_libraries_the_core_writes_with_are_core_dependencies() -> None:
    core = {d.split(">")[0].split("=")[0].split(";")[0].strip().lower() for d in PROJECT["project"]["dependencies"]}
    assert {"tomli-w", "tomlkit", "psutil", "pyyaml"} <= core


def test_pytest_configuration_warns_about_nothing_with_or_without_pytest_asyncio(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_probe():\n    assert True\n")
    for plugins in ([], ["-p", "no:asyncio"]):  # pytest-asyncio arrives with some extras, not with `dev`
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path), *plugins,
             "-p", "no:cacheprovider", "-W", "error::pytest.PytestWarning", "-q", str(probe)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert "warning" not in result.stdout.lower(), result.stdout
