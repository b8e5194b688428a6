"""The layering contract, checked over the source (every import, those inside functions included; only imports
under `if TYPE_CHECKING:` are left out, since they never run): no import cycle, the core imports nothing from the
plug-in folder (`adapters/`, installed as `benchbed.adapters`), and the layers below run one way."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = "benchbed.adapters"
# Top to bottom: a module may import its own layer's modules and any layer below, never one above. Each entry is a
# module or package of `benchbed`; modules not listed (and the plug-in folder, above them all) are checked only for
# cycles and for not reaching into the plug-ins.
LAYERS: list[tuple[str, ...]] = [
    ("benchbed.cli", "benchbed.__main__"),
    ("benchbed.report",),
    ("benchbed.nightly", "benchbed.diagnosis", "benchbed.export"),
    ("benchbed.pipeline",),
    ("benchbed.launch", "benchbed.store", "benchbed.catalog"),
    ("benchbed.metrics",),
    ("benchbed.spec",),
    ("benchbed.adapter", "benchbed.registry"),
    (
        "benchbed.trace",
        "benchbed.record",
        "benchbed.keys",
        "benchbed.errors",
        "benchbed.secrets",
        "benchbed.outputs",
        "benchbed.columns",
    ),
    ("benchbed.liveness",),
]


def _modules() -> dict[str, Path]:
    """Module name -> file, for benchbed/ and for adapters/ as the `benchbed.adapters` package."""
    found = {}
    for folder, package in ((ROOT / "benchbed", "benchbed"), (ROOT / "adapters", PLUGINS)):
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                yield from _runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


def imports_of(name: str) -> set[str]:
    """The benchbed modules `name` imports (`from pkg import sub` counts as importing pkg.sub)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in _runtime_imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
        targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names)
    return {t for t in targets if t in MODULES and t != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                cycles.append(sorted([node, *component]))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return cycles


def _layer(module: str) -> int | None:
    for depth, layer in enumerate(LAYERS):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return depth
    return None


def test_there_is_no_import_cycle() -> None:
    assert _cycles() == []


def test_the_core_imports_nothing_from_the_plugin_folder() -> None:
    core = {name for name in GRAPH if not name.startswith(PLUGINS)}
    reaching = {name: sorted(t for t in GRAPH[name] if t.startswith(PLUGINS)) for name in core}
    assert {name: targets for name, targets in reaching.items() if targets} == {}


def test_layers_run_one_way() -> None:
    upward = []
    for name, targets in GRAPH.items():
        depth = _layer(name)
        if depth is None:
            continue
        upward += [f"{name} -> {t}" for t in sorted(targets) if (up := _layer(t)) is not None and up < depth]
    assert upward == []


def test_every_layer_names_modules_that_exist() -> None:
    for layer in LAYERS:
        for module in layer:
            assert module in MODULES, f"LAYERS names {module}, which is not a module of benchbed"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from benchbed.report import plots\n", {"benchbed.report.plots"}),
        ("import benchbed.spec\n", {"benchbed.spec"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from benchbed import spec\n", set()),
        ("def f():\n    from benchbed.store import Store\n", {"benchbed.store"}),
    ],
)
def test_the_import_reader(source: str, expected: set[str], tmp_path: Path, monkeypatch) -> None:
    """What counts as an import: submodules by name, imports inside functions, not TYPE_CHECKING-only ones."""
    path = tmp_path / "probe.py"
    path.write_text(source)
    monkeypatch.setitem(MODULES, "benchbed.probe", path)
    assert imports_of("benchbed.probe") == expected
