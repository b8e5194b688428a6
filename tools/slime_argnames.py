"""The option strings slime's and Megatron-LM's argument parsers accept: the extractor behind
`tools/upstream.py refresh slime "slime VERSION"|megatron` (adapters/slime/upstream.json). Optional heavy imports
(sglang, ray, transformer_engine, ...) that are not installed are replaced by inert modules, since only the
argparse definitions are needed; torch must be installed."""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from unittest import mock

_OPTIONAL = (
    "transformer_engine",
    "apex",
    "flash_attn",
    "wandb",
    "sglang",
    "ray",
    "nvidia_resiliency_ext",
    "einops",
    "tensorstore",
    "zarr",
    "nvtx",
    "sentencepiece",
    "tiktoken",
    "transformers",
    "mamba_ssm",
    "causal_conv1d",
    "flashinfer",
    "deep_ep",
    "deep_gemm",
    "onelogger",
    "modelopt",
    "torch_memory_saver",
    "sglang_router",
    "pylatexenc",
    "math_verify",
    "datasets",
    "aiohttp",
    "httpx",
    "omegaconf",
    "hydra",
    "psutil",
    "numba",
    "blobfile",
    "mbridge",
    "megatron_bridge",
    "multistorageclient",
    "nvidia",
    "emerging_optimizers",
    "lightning",
    "regex",
)
_TRITON_USER = "megatron.core.transformer.custom_layers.batch_invariant_kernels"


class _InertFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last-resort finder: a module from _OPTIONAL that is not installed becomes a MagicMock."""

    def find_spec(self, name: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if name.split(".")[0] in _OPTIONAL else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__, module.__name__ = [], spec, spec.name
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None


def option_strings(slime_dir: Path, megatron_dir: Path, kind: str) -> list[str]:
    """Every `--option` the chosen parser accepts."""
    sys.path[:0] = [str(slime_dir), str(megatron_dir)]
    sys.meta_path.append(_InertFinder())
    sys.modules[_TRITON_USER] = mock.MagicMock(name=_TRITON_USER)
    sys.argv = ["x"]
    parser = argparse.ArgumentParser(allow_abbrev=False)
    extra: list[str] = []
    if kind == "megatron":
        from megatron.training import arguments as megatron_arguments

        parser = megatron_arguments.add_megatron_arguments(parser)
    else:
        from slime.utils import arguments as slime_arguments

        parser = slime_arguments.get_slime_extra_args_provider(None)(parser) or parser
        source = (slime_dir / "slime/utils/arguments.py").read_text()
        pre = re.search(r"def _pre_parse_mode\(\):(.*?)return temp_args", source, re.S)
        extra = re.findall(r'"(--[a-z0-9-]+)"', pre.group(1)) if pre else []
    return sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--")} | set(extra))
