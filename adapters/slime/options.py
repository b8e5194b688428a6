"""The `[slime]` table of an experiment spec: launch details benchbed's neutral spec does not cover."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SlimeOptions(BaseModel):
    """Validated [slime] passthrough; `args` are appended verbatim and checked against the pinned argument names."""

    model_config = ConfigDict(extra="forbid")

    slime_version: Literal["624b824", "v0.3.1"] = Field("624b824", description="pinned commit whose arguments apply")
    mode: Literal["sync", "one_step_off", "fully_async"] | None = Field(
        None, description="loop; default: sync when workload.max_staleness = 0, else one_step_off"
    )
    benchmark: Literal["full", "trainer_only"] = Field(
        "full", description="trainer_only: --debug-rollout-only --save-debug-rollout-data once, then replay"
    )
    trainer_only_rollouts: int = Field(2, gt=0, description="rollouts generated once for trainer_only replays")
    partial_rollout: bool = False
    over_sampling_batch_size: int | None = Field(None, gt=0, description="prompts per over-sampling round")
    update_weights_interval: int | None = Field(
        None, gt=0, description="train_async.py: push weights every N steps; default max(1, workload.max_staleness)"
    )
    rollout_num_gpus_per_engine: int | None = Field(None, gt=0)
    ray_address: str = "http://127.0.0.1:8265"
    slime_dir: str = Field("/root/slime", description="slime checkout on the Ray head (cwd of `ray job submit`)")
    megatron_path: str = "/root/Megatron-LM/"
    hf_checkpoint: str | None = Field(None, description="default: workload.model")
    ref_load: str | None = None
    load: str | None = None
    save: str | None = None
    prompt_data: str | None = None
    rollout_function_path: str | None = None
    custom_generate_function_path: str | None = None
    env: dict[str, str] = Field(default_factory=dict, description="extra runtime env vars for the Ray job")
    args: list[str] = Field(default_factory=list, description="extra arguments appended to the train command")
