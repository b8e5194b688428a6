"""The `[prime_rl]` table of an experiment spec, validated strictly."""

from __future__ import annotations

from typing import Any, Literal

from benchbed.adapters.prime_rl.presets import presets
from pydantic import BaseModel, ConfigDict, Field

PINNED_COMMIT = "559b447"
PresetName = Literal[(*presets(), "none")]  # type: ignore[valid-type]


class PrimeRLOptions(BaseModel):
    """What the neutral spec cannot say about a prime-rl launch; `config` is merged into the rendered TOML last."""

    model_config = ConfigDict(extra="forbid")

    checkout: str | None = Field(None, description="prime-rl checkout to run in; else $PRIME_RL_DIR")
    commit: Literal["559b447"] = Field(PINNED_COMMIT, description="prime-rl commit the rendered config targets")
    preset: PresetName | None = Field(None, description="MoE preset; None = by model name, 'none' = no preset")
    source_name: str = Field("train", min_length=1, description="name of the [[orchestrator.train.source]]")
    taskset: str | None = Field(None, description="verifiers taskset id; default from workload.task")
    harness: str | None = Field(None, description="agent harness id (e.g. bash, mini_swe_agent)")
    runtime: Literal["prime", "modal", "subprocess"] | None = Field(None, description="default from sandbox.backend")
    runtime_labels: list[str] = Field(default_factory=list)
    num_infer_replicas: int | None = Field(None, gt=0, description="multi-node: inference replicas")
    multi_node: bool | None = Field(None, description="None = multi-node when the GPUs exceed one node")
    weight_broadcast: Literal["nccl", "filesystem"] | None = None
    slurm: dict[str, Any] = Field(default_factory=dict, description="[slurm] table (job_name, partition, ...)")
    config: dict[str, Any] = Field(default_factory=dict, description="rl config passthrough, deep-merged last")
    extra_args: list[str] = Field(default_factory=list, description="appended to the `uv run rl` command")
