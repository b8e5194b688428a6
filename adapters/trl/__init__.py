"""Adapter `trl`: Hugging Face TRL's GRPOTrainer, rendered into a script run in the run directory like any framework,
and read back from what TRL writes (trainer_state.json, completions tables, its profiling timers in the W&B offline
history). Runs on a CPU with a tiny Qwen2/Qwen3/Qwen3-MoE built from a config; nothing is downloaded."""

from __future__ import annotations

from benchbed.adapters.trl.options import TrlOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class TrlAdapter(FrameworkAdapter):
    """Renders `python trl_grpo.py`; parses trainer_state.json, completions/*.parquet and the W&B history."""

    name = "trl"
    options_model = TrlOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    watcher = ".live:TrlReader"  # the rows the rendered script tees from W&B, as they are logged
    keymap = "keymap.toml"  # its framework figures' definitions (TRL reads no tracker history through the kit)
