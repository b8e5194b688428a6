"""The arguments open-instruct's grpo_fast.py and the config keys rLLM's unified trainer accept, read from their
sources: the extractors behind `tools/upstream.py refresh open_instruct|rllm keys` (adapters/*/upstream.json).

open-instruct: the fields of the dataclasses grpo_fast.py's ArgumentParserPlus parses (its `__main__`), with their
base classes' fields, read by AST (nothing is imported). rLLM: every dotted key of rllm/trainer/config/rllm/base.yaml
(under `rllm.`) and of rllm/backend/tinker.yaml (a `_global_` package: its keys as written)."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

# (file, class) pairs grpo_fast.py parses into; a base `module.Name` is looked up in open_instruct/module.py
PARSED = (("grpo_utils", "GRPOExperimentConfig"), ("dataset_transformation", "TokenizerConfig"),
          ("model_utils", "ModelConfig"), ("data_loader", "StreamingDataLoaderConfig"),
          ("data_loader", "VLLMConfig"), ("environments/tools/utils", "EnvsConfig"))  # fmt: skip


def open_instruct_flags(root: Path) -> list[str]:
    """Annotated fields of each parsed dataclass and of its bases (flag `--name` for field `name`)."""

    def fields(module: str, name: str) -> set[str]:
        tree = ast.parse((root / "open_instruct" / f"{module}.py").read_text())
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        own = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        for base in node.bases:
            if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
                own |= fields(base.value.id, base.attr)
            elif isinstance(base, ast.Name):
                own |= fields(module, base.id)
        return own

    return sorted(set().union(*(fields(module, name) for module, name in PARSED)))


def rllm_keys(root: Path) -> list[str]:
    """Dotted keys (a mapping's own key too) of rLLM's base config and its Tinker backend's."""

    def walk(node: object, prefix: str) -> list[str]:
        if not isinstance(node, dict):
            return []
        return [k for key, value in node.items() for k in (f"{prefix}{key}", *walk(value, f"{prefix}{key}."))]

    config = root / "rllm" / "trainer" / "config" / "rllm"
    base = walk(yaml.safe_load((config / "base.yaml").read_text()), "rllm.")
    return sorted(set(base) | set(walk(yaml.safe_load((config / "backend" / "tinker.yaml").read_text()), "")))
