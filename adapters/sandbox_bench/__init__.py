"""Adapter `sandbox`: `benchbed run experiments/sandbox-scaling.toml` runs sandbox-bench as a launch and
parses the trace it leaves, so the sweep is stored and reported like any other run."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

from pydantic import ValidationError

from benchbed.api import (
    TRACE_FILENAME,
    Adapter,
    ExperimentSpec,
    LaunchPlan,
    NotThisFrameworkError,
    SpecError,
    Trace,
    format_validation_error,
    read_trace,
)
from benchbed.sandbox.bench import ADAPTER, BenchConfig, BenchOptions

CONFIG_FILE = "sandbox_bench_config.json"


def bench_config(spec: ExperimentSpec) -> BenchConfig:
    """BenchConfig from the spec's [sandbox] table, plus a [sandbox_bench] table once the spec has one."""
    if spec.sandbox.backend == "none":
        raise SpecError(f'spec {spec.name!r}: set [sandbox] backend = "local" | "modal" | "prime"')
    data = copy.deepcopy(spec.adapter_table("sandbox_bench"))  # the spec must not change: its hash is the spec id
    data.setdefault("name", spec.name)
    data["backend"] = spec.sandbox.backend
    if spec.sandbox.max_starting is not None:
        data["max_starting"] = spec.sandbox.max_starting
    if spec.sandbox.start_timeout_s is not None:
        data["start_timeout_s"] = spec.sandbox.start_timeout_s
    if spec.sandbox.image is not None:
        data.setdefault("sandbox", {})["image"] = spec.sandbox.image
    try:
        return BenchConfig.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, f"spec {spec.name!r} [sandbox_bench]")) from None


class SandboxBenchAdapter(Adapter):
    """Renders `python -m benchbed.sandbox.bench` from the spec's [sandbox] and [sandbox_bench] tables."""

    name = ADAPTER
    spec_table = "sandbox_bench"
    options_model = BenchOptions

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        cfg = bench_config(spec)
        return LaunchPlan(
            argv=[sys.executable, "-m", "benchbed.sandbox.bench", "--config", CONFIG_FILE, "--out", "."],
            files={CONFIG_FILE: cfg.model_dump_json(indent=2)},
            timeout_s=spec.timeout_s,
            description=f"sandbox-bench on {cfg.backend}: levels {cfg.levels}",
        )

    def parse(self, path: Path) -> Trace:
        path = Path(path)
        file = path / TRACE_FILENAME if path.is_dir() else path
        if not file.exists() or file.suffix != ".parquet":
            raise NotThisFrameworkError(f"not a sandbox-bench run: {file} is not a benchbed trace.parquet")
        trace = read_trace(file)
        if trace.meta.adapter != ADAPTER:
            raise NotThisFrameworkError(f"not a sandbox-bench run: {file} was written by {trace.meta.adapter!r}")
        return trace
