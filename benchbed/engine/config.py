"""The `[ref]` spec table and the resolved engine configuration (pure pydantic: no torch import here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchbed.errors import SpecError
from benchbed.spec.model import ExperimentSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Strict):
    """A tiny MoE transformer built from a config and initialised from the seed (nothing is downloaded)."""

    arch: Literal["qwen3_moe", "glm4_moe"] = "qwen3_moe"
    layers: int = Field(2, gt=0)
    hidden: int = Field(64, gt=0)
    heads: int = Field(4, gt=0)
    kv_heads: int = Field(2, gt=0)
    experts: int = Field(4, gt=0, description="routed experts per MoE layer")
    top_k: int = Field(2, gt=0, description="experts per token")
    expert_hidden: int = Field(32, gt=0, description="intermediate size of one expert")

    @model_validator(mode="after")
    def _shape(self) -> ModelConfig:
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed experts ({self.experts})")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError("hidden must be a multiple of heads, and heads a multiple of kv_heads")
        return self


class RefConfig(_Strict):
    """What the reference engine runs: mode, processes, model, task, GRPO and the faults to inject."""

    mode: Literal["sync", "one_step_off", "async"] = "sync"
    staleness_policy: Literal["count", "drop"] = Field("count", description="async only: AReaL count or drop")
    in_flight_updates: bool = Field(False, description="async: generators take new weights mid-rollout")
    partial_rollouts: bool = Field(False, description="async: abort rollouts at a weight push, resume them later")
    filter_zero_adv: bool = False
    generators: int = Field(1, gt=0, description="generator worker processes")
    concurrency: int | None = Field(None, gt=0, description="rollouts in flight at once; default 2 batches")
    max_new_tokens: int = Field(6, gt=0, description="response tokens per turn")
    tool_turns: int = Field(0, ge=0, description="calculator calls executed in the rollout's sandbox")
    temperature: float = Field(1.0, gt=0)
    lr: float = Field(3e-3, gt=0)
    clip_eps: float = Field(0.2, gt=0)
    device: Literal["cpu", "cuda"] = "cpu"
    threads: int = Field(1, gt=0, description="torch threads per process")
    seed: int = 0
    model: ModelConfig = Field(default_factory=ModelConfig)
    max_starting: int = Field(8, gt=0, description="sandboxes in the starting state at once")
    sandbox_failure_rate: float = Field(0.0, ge=0, lt=1, description="start attempts that fail on purpose")
    straggler_fraction: float = Field(0.0, ge=0, le=1, description="rollouts whose checker is slowed down")
    straggler_delay_s: float = Field(0.5, ge=0)
    kill_generator_at_step: int | None = Field(None, gt=0, description="generator 0 dies once this step trains")

    @model_validator(mode="after")
    def _modes(self) -> RefConfig:
        if self.mode != "async" and (self.in_flight_updates or self.partial_rollouts):
            raise ValueError("in_flight_updates and partial_rollouts need mode = 'async'")
        if self.in_flight_updates and self.partial_rollouts:
            raise ValueError("choose in_flight_updates (continue under new weights) or partial_rollouts (abort)")
        return self


class EngineConfig(_Strict):
    """Everything one engine run needs, written by the adapter as engine.json."""

    steps: int = Field(gt=0)
    prompts_per_step: int = Field(gt=0)
    group_size: int = Field(gt=1)
    max_staleness: int = Field(ge=0)
    warmup_steps: int = Field(1, ge=0, description="steps left out of the engine's own window figures")
    ref: RefConfig

    @property
    def batch_size(self) -> int:
        return self.prompts_per_step * self.group_size

    @property
    def concurrency(self) -> int:
        """Rollouts in flight at once: one batch when generation and training alternate, else two by default."""
        if self.ref.concurrency is not None:
            return self.ref.concurrency
        return self.batch_size if self.ref.mode == "sync" else 2 * self.batch_size

    @property
    def mode_label(self) -> str:
        ref = self.ref
        if ref.mode != "async":
            return ref.mode
        label = f"async/{ref.staleness_policy}"
        if ref.in_flight_updates:
            label += "+in_flight"
        if ref.partial_rollouts:
            label += "+partial"
        return label


def engine_config(spec: ExperimentSpec) -> EngineConfig:
    """Validate the spec's [ref] table against its workload; errors name the file and the dotted field."""
    ref: RefConfig = spec.adapter_options("ref")  # validated when the spec was built
    w = spec.workload
    if w.group_size < 2:
        raise SpecError(f"{spec.source}: workload.group_size must be at least 2 for GRPO (got {w.group_size})")
    cfg = EngineConfig(steps=w.steps, prompts_per_step=w.prompts_per_step, group_size=w.group_size,
                       max_staleness=w.max_staleness, warmup_steps=spec.warmup_steps, ref=ref)  # fmt: skip
    if cfg.concurrency < w.group_size:
        raise SpecError(f"{spec.source}: ref.concurrency ({cfg.concurrency}) must be at least workload.group_size "
                        f"({w.group_size}), or no group could ever start")  # fmt: skip
    return cfg
