"""verl adapter: render a spec into a verl launch (Hydra overrides) and parse any verl run into the canonical trace."""

from __future__ import annotations

from benchbed.adapters.verl.options import VerlOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class VerlAdapter(FrameworkAdapter):
    """verl 0.9.x (V1 sync/colocate_async/separate_async, V0, fully_async, one_step_off) and older V0 runs; a run
    is a folder holding a verl file-logger JSONL."""

    name = "verl"
    options_model = VerlOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".history:parse_history"
    keymap = "keymap.toml"
    watcher = ".live:verl_reader"  # the file logger's metrics.jsonl, as verl appends to it
