"""The spec's `[openrlhf]` table: what `[workload]` and `[resources]` do not say about an OpenRLHF GRPO run."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OpenRLHFOptions(BaseModel):
    """Validated when the spec is loaded; OpenRLHF is not imported."""

    model_config = ConfigDict(extra="forbid")

    ray_address: str = Field("http://127.0.0.1:8265", description="the Ray dashboard `ray job submit` talks to")
    model_path: str | None = Field(None, description="--actor.model_name_or_path (default: workload.model)")
    prompt_data: str | None = Field(None, min_length=1, description="--data.prompt_dataset: a local dataset path")
    input_key: str = Field("input", description="--data.input_key")
    label_key: str = Field("label", description="--data.label_key")
    remote_rm_url: str | None = Field(None, min_length=1, description="--reward.remote_url: reward server or .py")
    estimator: str = Field("group_norm", description="--algo.advantage.estimator (group_norm is GRPO)")
    vllm_tensor_parallel_size: int = Field(4, gt=0, description="--vllm.tensor_parallel_size")
    zero_stage: int = Field(3, ge=0, le=3, description="--ds.zero_stage")
    kl_coef: float = Field(0.0, ge=0, description="--algo.kl.init_coef as a k3 loss; > 0 adds a reference model")
    learning_rate: float = Field(1e-6, gt=0, description="--actor.adam.lr")
    partial_rollout: bool = Field(False, description="--train.partial_rollout_enable (async only)")
    save_steps: int = Field(-1, description="--ckpt.save_steps (-1: no checkpoints)")
