"""slime adapter: render specs into `ray job submit` launches, parse console logs, TensorBoard events and rollout dumps.

Supported (pinned) slime commits: v0.3.1 (a6272da0d4f3, metric code under slime/utils) and 624b824 (624b824a898a,
metric code under slime/observability). See keymap.py for how slime's figures map onto benchbed's keys.
"""

from __future__ import annotations

from pathlib import Path

from benchbed.adapters.base import LaunchPlan
from benchbed.adapters.slime.discover import classify_in_dir
from benchbed.adapters.slime.ingest import parse_path
from benchbed.adapters.slime.options import SlimeOptions
from benchbed.adapters.slime.render import render as render_spec

from benchbed.runs import runs_under
from benchbed.spec import ExperimentSpec
from benchbed.trace import Trace


class SlimeAdapter:
    """benchbed's adapter for THUDM/slime."""

    name = "slime"
    options_model = SlimeOptions

    def render(self, spec: ExperimentSpec, run_dir: Path) -> LaunchPlan:
        return render_spec(spec, Path(run_dir))

    def parse(self, path: Path) -> Trace:
        return parse_path(Path(path))

    def find_runs(self, path: Path) -> list[Path]:
        """Directories under `path` holding slime console logs, TensorBoard event files or rollout dumps (a
        run's tensorboard*/ and *dump*/ folders belong to the run directory above them)."""
        return runs_under(Path(path), _marks_run)


def _marks_run(path: Path) -> Path | None:
    if not classify_in_dir(path):
        return None
    folder = path.parent
    return folder.parent if folder.name.startswith("tensorboard") or "dump" in folder.name else folder


__all__ = ["SlimeAdapter"]
