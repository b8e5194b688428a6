"""prime-rl adapter: render a spec into an `rl` TOML launch, and read prime-rl runs into the canonical trace.

Supports prime-rl@559b447 (v0.8.1.dev67, HEAD 2026-08-21) for rendering; parsing reads the HEAD era (metrics.jsonl and
per-step traces.jsonl), v0.6-v0.8.0 (60bc295; opt-in file monitor) and <= v0.5 (63331ad; console logs only)."""

from __future__ import annotations

from benchbed.adapters.prime_rl.options import PrimeRLOptions

from benchbed.adapterkit.adapter import FrameworkAdapter


class PrimeRLAdapter(FrameworkAdapter):
    """The `prime_rl` adapter: a run is a folder with a metrics.jsonl beside configs/, rollouts/ or logs/, or
    with trainer or orchestrator logs under logs/."""

    name = "prime_rl"
    options_model = PrimeRLOptions
    renderer = ".render:render_plan"
    parser = ".parse:parse_path"
    run_marker = ".discover:marks_run"
    history_parser = ".history:parse_history"
    history_kinds = ("wandb", "wandb-cloud")  # the trackers it logs to (W&B); its own files go to `parser`
    keymap = "keymap.toml"


__all__ = ["PrimeRLAdapter"]
