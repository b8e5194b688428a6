"""slime adapter: render specs into `ray job submit` launches, parse console logs, TensorBoard events and rollout dumps.

Supported (pinned) slime commits: v0.3.1 (a6272da0d4f3, metric code under slime/utils) and 624b824 (624b824a898a,
metric code under slime/observability). See keymap.py for how slime's figures map onto benchbed's keys.
"""

from __future__ import annotations

from benchbed.adapters.slime.options import SlimeOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class SlimeAdapter(FrameworkAdapter):
    """benchbed's adapter for THUDM/slime: a run is a folder with console logs, TensorBoard event files or rollout
    dumps (a run's tensorboard*/ and *dump*/ folders belong to the run directory above them)."""

    name = "slime"
    options_model = SlimeOptions
    renderer = ".render:render"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".history:parse_history"
    history_kinds = ("wandb", "wandb-cloud")  # the trackers it logs to (W&B); its own files go to `parser`
    keymap = "keymap.toml"


__all__ = ["SlimeAdapter"]
