"""Adapter `ref`: benchbed's CPU reference engine, launched as `python -m benchbed.engine` like any framework, and
read back from its native event log."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from benchbed.adapters.ref.parse import parse_run

from benchbed.api import Adapter, AdapterError, ExperimentSpec, LaunchPlan, Trace
from benchbed.engine.config import RefConfig, engine_config

CONFIG_FILENAME = "engine.json"
NEEDS = ("torch", "transformers", "tokenizers")


class RefAdapter(Adapter):
    """Renders the engine's command and configuration; parses events/*.jsonl into the canonical trace."""

    name = "ref"
    options_model = RefConfig

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        cfg = engine_config(spec)  # invalid specs fail here, before anything starts
        missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
        if missing:
            raise AdapterError(f"the ref adapter needs {', '.join(missing)}: pip install 'benchbed[ref]' "
                               "(torch pinned to the CPU build)")  # fmt: skip
        threads = str(cfg.ref.threads)
        env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
               "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
        return LaunchPlan(
            argv=[sys.executable, "-m", "benchbed.engine", "--config", CONFIG_FILENAME, "--out", "."],
            env=env,
            files={CONFIG_FILENAME: cfg.model_dump_json(indent=2)},
            timeout_s=spec.timeout_s,
            description=f"reference engine: {cfg.steps} GRPO steps, {cfg.mode_label}, {cfg.ref.model.arch}",
        )

    def parse(self, path: Path) -> Trace:
        return parse_run(Path(path))


__all__ = ["RefAdapter"]
