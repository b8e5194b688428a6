"""verl adapter: render a spec into a verl launch (Hydra overrides) and parse any verl run into the canonical trace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchbed.adapters.base import LaunchPlan
from benchbed.adapters.verl.options import VerlOptions

if TYPE_CHECKING:
    from benchbed.spec import ExperimentSpec
    from benchbed.trace import Trace


class VerlAdapter:
    """verl 0.9.x (V1 sync/colocate_async/separate_async, V0, fully_async, one_step_off) and older V0 runs."""

    name = "verl"
    options_model = VerlOptions

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        from benchbed.adapters.verl.render import render_plan

        return render_plan(spec, Path(run_dir))

    def parse(self, path: Path) -> Trace:
        from benchbed.adapters.verl.parse import parse_path

        return parse_path(Path(path))

    def find_runs(self, path: Path) -> list[Path]:
        """Directories under `path` holding a verl file-logger JSONL."""
        from benchbed.runs import runs_under

        return runs_under(Path(path), _marks_run)


def _marks_run(path: Path) -> Path | None:
    from benchbed.adapters.verl.records import is_file_logger_jsonl

    from benchbed.errors import NotThisFrameworkError

    if path.suffix != ".jsonl":
        return None
    try:
        return path.parent if is_file_logger_jsonl(path) else None
    except (NotThisFrameworkError, OSError):
        return None
