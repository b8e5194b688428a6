"""Adapter `roll`: a spec as a ROLL RLVR pipeline config (Hydra YAML) run by `examples/start_rlvr_pipeline.py`; its
TensorBoard or W&B history read through keymap.toml. Config keys, metrics and cadence: ROLL@8eb27cc (0.3.0)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from benchbed.adapterkit.adapter import HistoryAdapter


class RollOptions(BaseModel):
    """The spec's `[roll]` table: what `[workload]` and `[resources]` do not say about a ROLL RLVR run. Validated
    when the spec is loaded; ROLL is not imported."""

    model_config = ConfigDict(extra="forbid")

    roll_dir: str | None = Field(None, min_length=1, description="a ROLL checkout: examples/start_rlvr_pipeline.py")
    train_file: str | None = Field(None, min_length=1, description="actor_train.data_args.file_name: a JSONL")
    template: str = Field("qwen2_5", description="data_args.template (ROLL's chat templates)")
    domain: str = Field("math_rule", description="the reward domain (rewards.<domain>)")
    reward_worker: str = Field("roll.pipeline.rlvr.rewards.math_rule_reward_worker.MathRuleRewardWorker")
    tags: list[str] = Field(default_factory=lambda: ["deepmath_103k"], description="rewards.<domain>.tag_included")
    adv_estimator: Literal["grpo", "reinforce", "gae"] = "grpo"
    tensor_parallel: int = Field(4, gt=0, description="actor_train Megatron tensor_model_parallel_size")
    pipeline_parallel: int = Field(1, gt=0, description="actor_train Megatron pipeline_model_parallel_size")
    expert_parallel: int = Field(1, gt=0, description="actor_train Megatron expert_model_parallel_size")
    infer_backend: Literal["vllm", "sglang"] = "vllm"
    infer_tensor_parallel: int = Field(4, gt=0, description="actor_infer tensor_parallel_size = num_gpus_per_worker")
    learning_rate: float = Field(1e-6, gt=0)
    save_steps: int = Field(100, gt=0)
    seed: int = 42


class RollAdapter(HistoryAdapter):
    name = "roll"
    options_model = RollOptions
