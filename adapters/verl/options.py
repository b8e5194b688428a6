"""The `[verl]` table of a spec: verl-specific choices and passthrough Hydra overrides, validated strictly."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
# A Hydra override key, as Hydra's grammar reads one: an optional +, ++ or ~, then a name, a dotted path of names
# and integers, or a group path a/b; optionally @package. Names are ASCII (letters, digits, '_', '-', '$', not
# starting with a digit or '-'). Anything else cannot be passed on verl's command line.
_ID = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_SEGMENT = rf"(?:{_ID}|0|[1-9](?:_?[0-9])*)"
_PATH = rf"(?:{_ID}|{_SEGMENT}(?:\.{_SEGMENT})+)"
HYDRA_KEY = re.compile(rf"^(?:\+\+|\+|~)?(?:{_PATH}|{_ID}(?:/{_ID})+)(?:@{_PATH}?)?$")


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
    python: str = "python3"
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
