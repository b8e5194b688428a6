"""The discrete-event simulator: an RL generator and trainer joined by a queue, emitting the canonical trace."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from benchbed.errors import SpecError
from benchbed.sim.config import SimConfig
from benchbed.sim.engine import SimParams, simulate
from benchbed.sim.to_trace import outcome_to_trace
from benchbed.spec import ExperimentSpec, format_validation_error
from benchbed.trace import Trace


def sim_params(spec: ExperimentSpec) -> SimParams:
    """Validate the spec's [sim] table against the workload; errors name the file and the dotted field."""
    source = spec.source
    try:
        config = SimConfig.model_validate(spec.sim)
    except ValidationError as exc:
        message = format_validation_error(exc, source)
        raise SpecError(message.replace("field '", "field 'sim.")) from None
    workload = spec.workload
    if config.concurrency < workload.group_size:
        raise SpecError(
            f"{source}: sim.concurrency ({config.concurrency}) must be at least workload.group_size "
            f"({workload.group_size}), or no group could ever start"
        )
    return SimParams(
        steps=workload.steps,
        samples_per_step=workload.samples_per_step,
        group_size=workload.group_size,
        max_staleness=workload.max_staleness,
        config=config,
        max_response_tokens=workload.max_response_tokens,
        resources=spec.resources.model_dump(mode="json"),
    )


def simulate_spec(spec: ExperimentSpec, progress: Callable[[int], None] | None = None) -> Trace:
    """Simulate a spec in this process and return its trace."""
    params = sim_params(spec)
    return outcome_to_trace(simulate(params, progress), params)
