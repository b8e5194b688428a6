"""The discrete-event simulator: an RL generator and trainer joined by a queue, emitting the canonical trace."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from benchbed.errors import SpecError
from benchbed.sim.config import SimConfig
from benchbed.sim.engine import SimParams, simulate
from benchbed.sim.to_trace import outcome_to_trace
from benchbed.spec import ExperimentSpec
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
    _check_fits_in_memory(workload.steps * workload.samples_per_step, source)
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
# lists, the trace's rows and the parquet writer's copy come to about this much per sample (measured on 20k steps).
BYTES_PER_SAMPLE = 1000


def available_memory() -> int:
    """Bytes this machine can still give a process: MemAvailable (free + reclaimable cache) where Linux says."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _check_fits_in_memory(samples: int, source: str) -> None:
    """Refuse a run whose events cannot fit in this machine's free memory, before anything is launched."""
    need = samples * BYTES_PER_SAMPLE
    free = available_memory()
    if need > free:
        raise SpecError(
            f"{source}: workload.steps x samples per step = {samples:,} samples; the simulator keeps every event "
            f"in memory (about {BYTES_PER_SAMPLE} bytes a sample, {need / 2**30:,.1f} GiB), more than the "
            f"{free / 2**30:.1f} GiB free here: lower workload.steps or the batch size"
        )


def simulate_spec(spec: ExperimentSpec, progress: Callable[[int], None] | None = None) -> Trace:
    """Simulate a spec in this process and return its trace."""
    params = sim_params(spec)
    return outcome_to_trace(simulate(params, progress), params)
