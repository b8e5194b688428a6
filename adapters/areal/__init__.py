"""Adapter `areal`: AReaL (inclusionAI/AReaL), asynchronous RL with a staleness bound (`max_head_offpolicyness`).
Render writes AReaL's YAML config and its launcher command; parse reads a trial folder's perf-tracer spans and
session records (per-sample rollout spans) and its stats history (timeperf/*, through the key map)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class ArealOptions(BaseModel):
    """The spec's `[areal]` table: the AReaL settings the workload does not fix."""

    model_config = ConfigDict(extra="forbid")

    launcher: Literal["local", "ray", "slurm"] = Field("local", description="areal.infra.launcher.<launcher>")
    entry: str = Field("examples/math/gsm8k_rl.py", description="the training script AReaL's launcher runs")
    rollout_backend: Literal["sglang", "vllm"] = "sglang"
    actor_backend: Literal["fsdp", "megatron", "archon"] = "fsdp"
    max_head_offpolicyness: int | None = Field(None, ge=0, description="default: workload.max_staleness")
    max_concurrent_rollouts: int | None = Field(None, gt=0, description="default: prompts × group per step")
    dataset_path: str = Field("openai/gsm8k", description="train_dataset.path")
    lr: float = Field(1.7e-5, gt=0, description="actor.optimizer.lr")
    wandb_mode: Literal["offline", "online", "disabled"] = Field("offline", description="stats_logger.wandb.mode")


class ArealAdapter(HistoryAdapter):
    """AReaL's launcher and config from a spec; its perf/session traces and stats histories to the trace."""

    name = "areal"
    options_model = ArealOptions
