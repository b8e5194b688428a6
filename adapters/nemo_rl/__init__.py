"""Adapter `nemo_rl`: NVIDIA NeMo-RL's GRPO (`examples/run_grpo.py`, synchronous or `grpo.async_grpo`), rendered as
its own command with Hydra-style overrides and read back from its logger's history (TensorBoard by default)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class NemoRLOptions(BaseModel):
    """The spec's `[nemo_rl]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field("/opt/nemo-rl", description="the NeMo-RL checkout the command runs in (its container's)")
    config: str = Field("examples/configs/grpo_math_1B.yaml", description="base YAML, relative to the checkout")
    val_period: int = Field(0, ge=0, description="grpo.val_period (0: no validation)")
    save_period: int = Field(0, ge=0, description="checkpointing.save_period (0: checkpointing off)")
    overrides: list[str] = Field(default_factory=list, description="more `key=value` overrides (e.g. W&B), last")


class NemoRLAdapter(HistoryAdapter):
    """Renders `uv run python examples/run_grpo.py --config ... key=value ...`; parses its TensorBoard history."""

    name = "nemo_rl"
    options_model = NemoRLOptions
