"""The config keys NeMo-RL's and SkyRL's command lines accept, read from their sources: the extractors behind
`tools/upstream.py refresh nemo_rl|skyrl keys` (adapters/*/upstream.json), so rendered keys are checked offline.

NeMo-RL: every dotted key of examples/configs/grpo_math_1B.yaml (the base every GRPO recipe's `defaults` chain ends
in). SkyRL: every dotted field of the `SkyRLTrainConfig` dataclass tree in skyrl/train/config/config.py, read by AST
(nothing is imported); a field typed as a dict is an open subtree `path.*`."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml


def nemo_rl_keys(root: Path) -> list[str]:
    """Dotted keys of the base GRPO YAML (a mapping's own key too, so `a.b` and `a.b.c` both appear)."""

    def walk(node: object, prefix: str) -> list[str]:
        if not isinstance(node, dict):
            return []
        return [k for key, value in node.items() for k in (f"{prefix}{key}", *walk(value, f"{prefix}{key}."))]

    return sorted(walk(yaml.safe_load((root / "examples/configs/grpo_math_1B.yaml").read_text()), ""))


def skyrl_fields(root: Path) -> list[str]:
    """Dotted fields of SkyRLTrainConfig: a field whose annotation names another dataclass of the module recurses."""
    tree = ast.parse((root / "skyrl/train/config/config.py").read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def names(annotation: ast.expr) -> set[str]:
        return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}

    def walk(name: str, prefix: str) -> list[str]:
        out = []
        for stmt in classes[name].body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            path, inner = f"{prefix}{stmt.target.id}", names(stmt.annotation)
            nested = sorted(n for n in inner if n in classes and n != name)
            out.append(path)
            out += [k for n in nested for k in walk(n, path + ".")]
            if inner & {"dict", "Dict", "DictConfig"} and not nested:
                out.append(path + ".*")
        return out

    return sorted(set(walk("SkyRLTrainConfig", "")))
