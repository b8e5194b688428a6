"""Adapter `roll`: a spec as a ROLL RLVR pipeline config (Hydra YAML) run by `examples/start_rlvr_pipeline.py`; its
TensorBoard or W&B history read through keymap.toml. Config keys, metrics and cadence: ROLL@8eb27cc (0.3.0)."""

from __future__ import annotations

from benchbed.adapters.roll.options import RollOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class RollAdapter(FrameworkAdapter):
    name = "roll"
    options_model = RollOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".parse:parse_history"
    keymap = "keymap.toml"
