"""The discrete-event simulator: an RL generator and trainer joined by a queue, emitting the canonical trace."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchbed.errors import SpecError
from benchbed.sim.config import SimConfig
from benchbed.sim.engine import SimParams, simulate
from benchbed.sim.to_trace import outcome_to_trace, range_ids
from benchbed.spec.model import ExperimentSpec
from benchbed.trace import Trace


def sim_params(spec: ExperimentSpec) -> SimParams:
    """Validate the spec's [sim] table against the workload; errors name the file and the dotted field."""
    source = spec.source
    config: SimConfig = spec.adapter_options("sim")  # validated when the spec was built
    workload = spec.workload
    if config.concurrency < workload.group_size:
        raise SpecError(
            f"{source}: sim.concurrency ({config.concurrency}) must be at least workload.group_size "
            f"({workload.group_size}), or no group could ever start"
        )
    _check_fits_in_memory(workload.steps * workload.samples_per_step, config.concurrency, source)
    return SimParams(
        steps=workload.steps,
        samples_per_step=workload.samples_per_step,
        group_size=workload.group_size,
        max_staleness=workload.max_staleness,
        config=config,
        max_response_tokens=workload.max_response_tokens,
        resources=spec.resources.model_dump(mode="json"),
    )


# The simulator keeps every sample's events in memory until the trace is written (it does not stream): engine
# lists, the trace's rows and the parquet writer's copy come to about this much per sample (measured on 20k steps),
# and each generator slot about this much whether used or not (measured with 2 million slots: 455 MB).
BYTES_PER_SAMPLE = 1000
BYTES_PER_SLOT = 250


def memory_needed(samples: int, concurrency: int) -> int:
    """Bytes the simulator holds for a run of `samples` samples on `concurrency` generator slots."""
    return samples * BYTES_PER_SAMPLE + concurrency * BYTES_PER_SLOT


def available_memory() -> int:
    """Bytes this machine can still give a process: MemAvailable (free + reclaimable cache) where Linux says."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _check_fits_in_memory(samples: int, concurrency: int, source: str) -> None:
    """Refuse a run whose events and slots cannot fit in this machine's free memory, before anything is launched."""
    need = memory_needed(samples, concurrency)
    free = available_memory()
    if need > free:
        raise SpecError(
            f"{source}: workload.steps x samples per step = {samples:,} samples on sim.concurrency = "
            f"{concurrency:,} slots; the simulator keeps every event and slot in memory (about {BYTES_PER_SAMPLE} "
            f"bytes a sample, {BYTES_PER_SLOT} a slot: {need / 2**30:,.1f} GiB), more than the "
            f"{free / 2**30:.1f} GiB free here: lower workload.steps, the batch size or sim.concurrency"
        )


def simulate_spec(spec: ExperimentSpec, progress: Callable[[int], None] | None = None) -> Trace:
    """Simulate a spec in this process and return its trace. The strings of the sample ids the run is expected to
    start (every step's batch and as many again as admission lets it start ahead) are cast in a worker thread while
    the event loop runs: the cast releases the GIL, so it takes the core the loop leaves idle."""
    params = sim_params(spec)
    expected = (params.steps + params.max_staleness + 1) * params.samples_per_step
    with ThreadPoolExecutor(1, thread_name_prefix="benchbed-sample-ids") as pool:
        names = pool.submit(range_ids, 0, expected)
        out = simulate(params, progress)
        return outcome_to_trace(out, params, names.result())
