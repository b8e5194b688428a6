"""Adapter `open_instruct`: AllenAI open-instruct's asynchronous GRPO trainer (`open_instruct/grpo_fast.py`), rendered
as its own `uv run python open_instruct/grpo_fast.py --flag value ...` command and read back from its W&B history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class OpenInstructOptions(BaseModel):
    """The spec's `[open_instruct]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field("/workspace/open-instruct", description="the open-instruct checkout the command runs in")
    vllm_tensor_parallel_size: int = Field(1, gt=0, description="--vllm_tensor_parallel_size (GPUs per vLLM engine)")
    dataset_mixer_list: list[str] = Field(default_factory=list, description="--dataset_mixer_list NAME FRACTION ...")
    local_eval_every: int = Field(-1, description="--local_eval_every (steps between in-loop evals; -1: none)")
    save_freq: int = Field(-1, description="--save_freq (steps between model saves; -1: none)")
    overrides: list[str] = Field(default_factory=list, description="more arguments, appended last as written")


class OpenInstructAdapter(HistoryAdapter):
    """Renders `uv run python open_instruct/grpo_fast.py --flag value ...`; parses its W&B history."""

    name = "open_instruct"
    options_model = OpenInstructOptions
