"""Adapter `openrlhf`: a spec as OpenRLHF's `ray job submit -- python3 -m openrlhf.cli.train_ppo_ray` launch; its W&B or
TensorBoard history (`train/*`) read through keymap.toml. Flags, keys and cadence: OpenRLHF@3c3be62 (0.11.0)."""

from __future__ import annotations

from benchbed.adapters.openrlhf.options import OpenRLHFOptions

from benchbed.adapterkit.adapter import HistoryAdapter


class OpenRLHFAdapter(HistoryAdapter):
    name = "openrlhf"
    options_model = OpenRLHFOptions
