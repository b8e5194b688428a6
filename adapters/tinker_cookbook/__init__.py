"""Adapter `tinker_cookbook`: thinking-machines-lab's tinker-cookbook RL loop (`tinker_cookbook.rl.train`), rendered as
a recipe's own `python -m RECIPE key=value ...` command and read back from its log folder (metrics.jsonl, and the
Chrome trace trace_events.jsonl when tracing is on) or its W&B history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class TinkerCookbookOptions(BaseModel):
    """The spec's `[tinker_cookbook]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field(".", description="the directory the command runs in (tinker-cookbook installed there)")
    recipe: str = Field("tinker_cookbook.recipes.math_rl.train", description="the recipe module run with -m")
    env: str = Field("gsm8k", description="the math_rl recipe's env (arithmetic, math, polaris, deepmath, gsm8k)")
    lora_rank: int = Field(32, gt=0, description="lora_rank")
    learning_rate: float = Field(1e-5, gt=0, description="learning_rate")
    overrides: list[str] = Field(default_factory=list, description="more `key=value` arguments, appended last")


class TinkerCookbookAdapter(HistoryAdapter):
    """Renders `python -m RECIPE key=value ...`; parses its metrics.jsonl (or W&B history) and trace_events.jsonl."""

    name = "tinker_cookbook"
    options_model = TinkerCookbookOptions
    history_kinds = ("wandb", "wandb-cloud")  # its log folder (metrics.jsonl) goes to `parser`
