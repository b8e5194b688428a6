"""MoE launch presets for prime-rl (presets.toml, in the kit's preset format): each a partial `rl` config plus the
inference layout benchbed needs to size the deployment, read through these accessors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbed.adapterkit.presets import Preset, load_presets

PRESETS_FILE = Path(__file__).with_name("presets.toml")
GPUS_PER_REPLICA = 8  # inference GPUs per replica where a preset does not say


def presets() -> dict[str, Preset]:
    """The presets by name, in the order they are tried."""
    return load_presets(PRESETS_FILE)


def preset_config(preset: Preset) -> dict[str, Any]:
    """The partial `rl` config the preset merges under the spec-derived keys."""
    return dict(preset.values.get("config", {}))


def gpus_per_replica(preset: Preset) -> int:
    """Inference GPUs per replica (one vLLM engine group)."""
    return int(preset.values.get("gpus_per_replica", GPUS_PER_REPLICA))


def pd_disaggregated(preset: Preset) -> bool:
    """Whether each replica's nodes split half prefill, half decode."""
    return bool(preset.values.get("pd_disaggregated", False))


def served_model(preset: Preset) -> str | None:
    """The checkpoint served for generation (e.g. an FP8 variant), where it is not workload.model."""
    return preset.values.get("generation_model")
