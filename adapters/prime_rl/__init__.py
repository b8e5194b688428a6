"""prime-rl adapter: render a spec into an `rl` TOML launch, and read prime-rl runs into the canonical trace.

Supports prime-rl@559b447 (v0.8.1.dev, HEAD era) for rendering; parsing reads the HEAD era (metrics.jsonl and
per-step traces.jsonl), v0.6-v0.8.0 (opt-in file monitor) and <= v0.5 (console logs only)."""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.base import LaunchPlan
from benchbed.adapters.prime_rl.options import PrimeRLOptions
from benchbed.adapters.prime_rl.parse import parse_path
from benchbed.adapters.prime_rl.render import render_plan

from benchbed.runs import runs_under
from benchbed.spec import ExperimentSpec
from benchbed.trace import Trace

SUPPORTED_COMMITS = {"559b447": "v0.8.1.dev67 (HEAD 2026-08-21)", "60bc295": "v0.8.0", "63331ad": "v0.5.0"}


class PrimeRLAdapter:
    """The `prime_rl` adapter (entry point `benchbed.adapters.prime_rl:PrimeRLAdapter`)."""

    name = "prime_rl"
    options_model = PrimeRLOptions

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        return render_plan(spec, Path(run_dir))

    def parse(self, path: Path) -> Trace:
        return parse_path(Path(path))

    def find_runs(self, path: Path) -> list[Path]:
        """Directories under `path` with a metrics.jsonl beside configs/, rollouts/ or logs/, or with trainer or
        orchestrator logs under logs/."""
        return runs_under(Path(path), _marks_run)


_LOG_NAMES = ("trainer.log", "orchestrator.log", "trainer.stdout", "orchestrator.stdout")


def _marks_run(path: Path) -> Path | None:
    if path.name == "metrics.jsonl" and any((path.parent / m).is_dir() for m in ("configs", "rollouts", "logs")):
        return path.parent
    if path.name in _LOG_NAMES:
        return next((p.parent for p in path.parents if p.name == "logs"), None)
    return None


__all__ = ["PrimeRLAdapter", "SUPPORTED_COMMITS"]
