"""The `[example]` table of a spec: what the neutral spec cannot say about a toy-loop launch."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExampleOptions(BaseModel):
    """Validated when the spec is loaded (the adapter's `options_model`); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, ge=0, description="random seed of the toy loop")
    update_s: float = Field(3.0, gt=0, description="virtual seconds of training per step")
    sync_s: float = Field(0.5, ge=0, description="virtual seconds of weight sync per step")
