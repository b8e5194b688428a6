"""Render a spec into AReaL's YAML config (GRPOConfig's fields, kept as the template areal.yaml beside this file) and
its launcher command, `python3 -m areal.infra.launcher.<launcher> <entry> --config areal.yaml`, run in the run
directory. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbed.adapters.areal import ArealOptions

from benchbed.adapterkit.omegaconf_text import literal
from benchbed.adapterkit.templates import render_template, spec_values, yaml_text
from benchbed.api import ExperimentSpec, LaunchPlan, SpecError

CONFIG = "areal.yaml"
TEMPLATE = Path(__file__).with_name(CONFIG)


def areal_config(spec: ExperimentSpec, run_dir: Path) -> dict[str, Any]:
    """The config AReaL's load_expr_config reads: the template filled with the workload as AReaL's fields, every
    string escaped so that OmegaConf reads it back verbatim."""
    opts: ArealOptions = spec.adapter_options("areal")
    w, r = spec.workload, spec.resources
    if r.colocated or r.trainer_gpus < 1 or r.generator_gpus < 1:
        raise SpecError(
            f"{spec.source}: the areal adapter renders AReaL's decoupled mode: colocated = false, trainer_gpus and "
            "generator_gpus >= 1"
        )
    values = spec_values(spec, run_dir, n_nodes=-(-(r.trainer_gpus + r.generator_gpus) // r.gpus_per_node))
    values["max_concurrent_rollouts"] = opts.max_concurrent_rollouts or w.prompts_per_step
    bound = opts.max_head_offpolicyness
    values["max_head_offpolicyness"] = w.max_staleness if bound is None else bound
    return literal(render_template(TEMPLATE, values))


def render_plan(spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
    opts: ArealOptions = spec.adapter_options("areal")
    config = areal_config(spec, run_dir)
    argv = ["python3", "-m", f"areal.infra.launcher.{opts.launcher}", opts.entry, "--config", CONFIG]
    bound = config["rollout"]["max_head_offpolicyness"]
    description = f"AReaL GRPO ({opts.launcher} launcher), {spec.workload.steps} steps, max_head_offpolicyness {bound}"
    files = {CONFIG: yaml_text(config)}
    return LaunchPlan(argv=argv, files=files, timeout_s=spec.timeout_s, description=description)
