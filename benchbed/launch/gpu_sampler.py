"""Sample this machine's NVIDIA GPUs once a second while a local launch runs, through NVML (nvidia-ml-py's
`pynvml`), into `gpu_samples.jsonl` in the run directory: one line per GPU and sample, `{"t": epoch seconds,
"gpu": index, "utilization": %, "memory_used": bytes, "power": W, "sm_clock": MHz}`. Without NVML (no package, no
driver, no GPU) nothing is sampled and nothing fails; a quantity NVML refuses for one GPU is left out of its line."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SAMPLES_FILENAME = "gpu_samples.jsonl"
INTERVAL_S = 1.0


def load_nvml() -> Any | None:
    """The initialised `pynvml` module with at least one GPU, or None where NVML cannot be used."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # pynvml.NVMLError: no driver or library on this machine
        return None
    try:
        if pynvml.nvmlDeviceGetCount() > 0:
            return pynvml
    except Exception:
        pass
    pynvml.nvmlShutdown()
    return None


def _reading(read: Callable[[], Any]) -> Any | None:
    """One NVML call's result, or None where this GPU does not support it."""
    try:
        return read()
    except Exception:  # pynvml.NVMLError_NotSupported and its kin
        return None


def sample_line(nvml: Any, index: int, handle: Any, now: float) -> dict[str, float]:
    """One GPU's sample: what NVML gives for it now."""
    line: dict[str, float] = {"t": now, "gpu": index}
    utilization = _reading(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
    memory = _reading(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    power_mw = _reading(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    clock = _reading(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
    if utilization is not None:
        line["utilization"] = float(utilization.gpu)
    if memory is not None:
        line["memory_used"] = float(memory.used)
    if power_mw is not None:
        line["power"] = power_mw / 1000.0
    if clock is not None:
        line["sm_clock"] = float(clock)
    return line


@contextlib.contextmanager
def gpu_sampling(run_dir: Path, nvml: Any | None = None, interval_s: float | None = None) -> Iterator[bool]:
    """Sample every GPU each `interval_s` seconds (INTERVAL_S by default) into run_dir/gpu_samples.jsonl while the
    block runs; yields whether sampling runs (False without NVML). `nvml` is the pynvml module (loaded when None)."""
    interval_s = INTERVAL_S if interval_s is None else interval_s
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        yield False
        return
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    stop = threading.Event()

    def run() -> None:
        with open(Path(run_dir) / SAMPLES_FILENAME, "a", encoding="utf-8") as out:
            while True:
                now = time.time()
                for index, handle in enumerate(handles):
                    out.write(json.dumps(sample_line(nvml, index, handle, now)) + "\n")
                out.flush()
                if stop.wait(interval_s):
                    return

    thread = threading.Thread(target=run, name="benchbed-gpu-sampler", daemon=True)
    thread.start()
    try:
        yield True
    finally:
        stop.set()
        thread.join(timeout=10 * interval_s)
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def read_samples(path: Path, warnings: list[str]) -> tuple[list[float], list[str], list[float]]:
    """(wall times, keys `nvml.<gpu>.<quantity>`, values) of a gpu_samples.jsonl; a line that is not a sample is
    skipped with a warning naming it."""
    times: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, text in enumerate(fh, 1):
            try:
                line = json.loads(text)
                t, gpu = float(line["t"]), int(line["gpu"])
            except (ValueError, KeyError, TypeError):
                warnings.append(f"{path}:{number}: not a GPU sample (expected a JSON object with t and gpu); skipped")
                continue
            for quantity in ("utilization", "memory_used", "power", "sm_clock"):
                if isinstance(line.get(quantity), int | float):
                    times.append(t)
                    keys.append(f"nvml.{gpu}.{quantity}")
                    values.append(float(line[quantity]))
    return times, keys, values
