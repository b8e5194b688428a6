"""Adapter `miles`: radixark/miles, slime's fork and successor, rendered as its own `python3 train.py|train_async.py
--flag value ...` command and read back from its dashboard folder (`--use-miles-dashboard`) or its W&B history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class MilesOptions(BaseModel):
    """The spec's `[miles]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field("/root/miles", description="the Miles checkout the command runs in")
    rollout_num_gpus_per_engine: int = Field(1, gt=0, description="--rollout-num-gpus-per-engine")
    prompt_data: str | None = Field(None, description="--prompt-data (a JSONL file)")
    args: list[str] = Field(default_factory=list, description="more Miles arguments, appended last")


class MilesAdapter(HistoryAdapter):
    """Renders Miles' train script with `--use-miles-dashboard`; parses the dashboard's metrics and phases, or a
    W&B history with Miles' own keys (slime's keys are read through slime's parser and key map)."""

    name = "miles"
    options_model = MilesOptions
    history_kinds = ("wandb", "wandb-cloud")  # the trackers it logs to; its dashboard folder goes to `parser`
