"""Adapter `skyrl`: NovaSky-AI SkyRL's PPO/GRPO trainer (`skyrl.train`), fully asynchronous or synchronous, rendered as
its own `uv run -m ENTRYPOINT key=value ...` command and read back from its W&B history."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class SkyRLOptions(BaseModel):
    """The spec's `[skyrl]` table."""

    model_config = ConfigDict(extra="forbid")

    checkout: str = Field("/workspace/SkyRL", description="the SkyRL checkout the command runs in")
    backend: Literal["fsdp", "megatron"] = Field("fsdp", description="uv extra and trainer.strategy")
    tensor_parallel_size: int = Field(1, gt=0, description="generator.inference_engine.tensor_parallel_size")
    train_data: list[str] = Field(default_factory=list, description="data.train_data parquet files (empty: SkyRL's)")
    generation_workers: int | None = Field(None, gt=0, description="fully_async.num_parallel_generation_workers")
    sample_full_batch: bool = Field(False, description="fully_async: drop zero-variance groups until the batch is full")
    overrides: list[str] = Field(default_factory=list, description="more `key=value` overrides, appended last")


class SkyRLAdapter(HistoryAdapter):
    """Renders `uv run --isolated --extra fsdp -m ENTRYPOINT key=value ...`; parses its W&B history."""

    name = "skyrl"
    options_model = SkyRLOptions
