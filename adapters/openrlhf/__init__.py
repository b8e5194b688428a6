"""Adapter `openrlhf`: renders a spec into OpenRLHF's `train_ppo_ray` command (submitted with `ray job submit`) and
reads its tracker histories (W&B or TensorBoard, `train/*` keys) through keymap.toml.

Flag names, key names and logging cadence are those of OpenRLHF@3c3be62 (0.11.0, 2026-08-13)."""

from __future__ import annotations

from benchbed.adapters.openrlhf.options import OpenRLHFOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class OpenRLHFAdapter(FrameworkAdapter):
    """Launches `python -m openrlhf.cli.train_ppo_ray` on a Ray cluster and reads its W&B or TensorBoard history."""

    name = "openrlhf"
    options_model = OpenRLHFOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".parse:parse_history"
    keymap = "keymap.toml"
