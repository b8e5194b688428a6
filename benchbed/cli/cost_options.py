"""`benchbed ingest` options giving an existing run the [resources] table (GPU counts, price) the cost metrics need."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from pydantic import ValidationError

from benchbed.errors import BenchbedError
from benchbed.spec import Resources


def resources_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--price-per-gpu-hour, --trainer-gpus, --generator-gpus, --colocated."""
    options = [
        click.option("--price-per-gpu-hour", type=float, default=None,
                     help="$ per GPU-hour, for cost_per_step and cost_per_mtok (needs the GPU counts)"),
        click.option("--trainer-gpus", type=int, default=None, help="GPUs the trainer used"),
        click.option("--generator-gpus", type=int, default=None,
                     help="GPUs the generator used (default with --colocated: the trainer's)"),
        click.option("--colocated", is_flag=True, help="trainer and generator shared their GPUs (billed once)"),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def resources_table(
    price_per_gpu_hour: float | None, trainer_gpus: int | None, generator_gpus: int | None, colocated: bool
) -> dict[str, Any] | None:
    """The [resources] table the options describe; None when none was given; BenchbedError when counts are missing."""
    if price_per_gpu_hour is None and trainer_gpus is None and generator_gpus is None and not colocated:
        return None
    if trainer_gpus is None or (generator_gpus is None and not colocated):
        raise BenchbedError(
            "ingest: --price-per-gpu-hour, --generator-gpus and --colocated need --trainer-gpus, and "
            "--generator-gpus unless --colocated (how many GPUs the run used)"
        )
    given = {"trainer_gpus": trainer_gpus, "generator_gpus": trainer_gpus if generator_gpus is None else generator_gpus,
             "colocated": colocated or None, "price_per_gpu_hour": price_per_gpu_hour}  # fmt: skip
    try:
        chosen = Resources(**{k: v for k, v in given.items() if v is not None})
        return chosen.model_dump(mode="json", exclude_unset=True)
    except ValidationError as exc:
        problems = "; ".join(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise BenchbedError(f"ingest: {problems}") from None
