"""Adapter `rllm`: rLLM's unified trainer (`rllm.trainer.unified_trainer`) on its Tinker backend, fully asynchronous
or on-policy, rendered as its own `python -m ENTRYPOINT key=value ...` command and read back from its W&B history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter

COUNTDOWN = "examples.countdown.unified_trainer.train_countdown_unified_tinker"  # rLLM's Tinker example


class RllmOptions(BaseModel):
    """The spec's `[rllm]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field("/workspace/rllm", description="the rLLM checkout the command runs in")
    entrypoint: str = Field(COUNTDOWN, description="the training script's module (`python -m`), a Hydra app")
    fwd_bwd_group_size: int | None = Field(None, gt=0, description="rllm.async_training.fwd_bwd_group_size")
    partial_rollout: bool = Field(False, description="rllm.async_training.partial_rollout (no drain at weight sync)")
    test_freq: int = Field(0, ge=0, description="rllm.trainer.test_freq (steps between validations; 0: none)")
    overrides: list[str] = Field(default_factory=list, description="more `key=value` overrides, appended last")


class RllmAdapter(HistoryAdapter):
    """Renders `python -m ENTRYPOINT rllm/backend=tinker key=value ...`; parses its W&B history."""

    name = "rllm"
    options_model = RllmOptions
