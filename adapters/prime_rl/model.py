"""Intermediate records the prime-rl readers fill and the emitter turns into canonical events."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

NAN = math.nan


@dataclass
class TrainerStep:
    """One trainer step's timers (seconds), from a metrics.jsonl time row or a console step line."""

    step: int
    step_s: float
    wait_s: float = NAN
    load_s: float = NAN
    compute_s: float = NAN
    weight_sync_s: float = NAN
    checkpoint_s: float = NAN
    t_end: float = NAN  # epoch seconds at which the step was logged
    source: str = ""
    native: dict[str, float] = field(default_factory=dict)


@dataclass
class OrchestratorStep:
    """One shipped batch: the orchestrator's per-step row (pause time, staleness, counts)."""

    step: int
    values: dict[str, float] = field(default_factory=dict)
    t_end: float = NAN
    source: str = ""


@dataclass(slots=True)
class SandboxBoot:
    """The boot phase of one trace: runtime provisioning, create -> ready."""

    runtime: str
    t0: float
    t1: float  # NaN when the sandbox never came up
    ok: bool
    sandbox_id: str = ""
    message: str = ""
    image_cached: bool | None = None


@dataclass(slots=True)
class Episode:
    """One verifiers episode as recorded in rollouts/step_N/train/{all,effective}/traces.jsonl."""

    id: str
    group: str
    window_step: int  # the step_N directory it was filed under (batch being collected when it arrived)
    v_start: int = -1
    v_end: int = -1
    ok: bool = False
    error_type: str = ""
    error_message: str = ""
    reward: float = NAN
    t0: float = NAN
    t1: float = NAN
    env: str = ""
    stop: str = ""
    boots: list[SandboxBoot] = field(default_factory=list)
    source: str = ""
    prompt_tokens: int = -1  # tokens fed in (system, user, tool), counted once; -1 when no call reported usage
    response_tokens: int = -1  # tokens the model generated, over every call of every trace


@dataclass
class RunData:
    """Everything read from one run, before it becomes a trace."""

    trainer: dict[int, TrainerStep] = field(default_factory=dict)
    orchestrator: dict[int, OrchestratorStep] = field(default_factory=dict)
    evals: dict[int, dict[str, list[float]]] = field(default_factory=dict)  # step -> quality.eval.* -> scores
    episodes: list[Episode] = field(default_factory=list)
    trained_at: dict[str, int] = field(default_factory=dict)  # episode id -> step whose batch carried it
    effective_steps: set[int] = field(default_factory=set)
    pauses: list[tuple[float, float]] = field(default_factory=list)  # epoch spans the dispatcher was paused
    config: dict[str, Any] = field(default_factory=dict)
    evidence: set[str] = field(default_factory=set)  # era markers seen
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: bool = False
    step_offset: int = 0  # added to native step numbers (0-indexed eras) so steps count from 1
    sft: str | None = None  # what shows an SFT run (`sft` entrypoint: trainer only, no orchestrator), where
