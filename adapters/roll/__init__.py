"""Adapter `roll`: renders a spec into a ROLL RLVR pipeline config (Hydra YAML) launched with
`python examples/start_rlvr_pipeline.py`, and reads its tracker histories (TensorBoard or W&B) through keymap.toml.

Config keys, metric names and logging cadence are those of ROLL@8eb27cc (0.3.0, 2026-08-19)."""

from __future__ import annotations

from benchbed.adapters.roll.options import RollOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class RollAdapter(FrameworkAdapter):
    """Launches ROLL's RLVR pipeline from a ROLL checkout and reads its TensorBoard or W&B history."""

    name = "roll"
    options_model = RollOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".parse:parse_history"
    keymap = "keymap.toml"
