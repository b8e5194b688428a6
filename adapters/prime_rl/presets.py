"""MoE launch presets: trainer parallelism and inference layout per model family, after prime-rl's examples/advanced.

Each preset is a partial `rl` config (deep-merged under the spec-derived keys) plus the inference layout benchbed
needs to size the deployment: GPUs per inference replica and, for prefill/decode disaggregation, the split."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    """A model family's launch shape."""

    name: str
    pattern: str  # matched case-insensitively against workload.model
    config: dict[str, Any] = field(default_factory=dict)
    gpus_per_replica: int = 8  # inference GPUs per replica (one vLLM engine group)
    pd_disaggregated: bool = False  # split each replica's nodes half prefill, half decode
    generation_model: str | None = None  # checkpoint served for generation (e.g. an FP8 variant)


_MOE_TRAINER = {"impl": "custom", "ep": 8, "ac": {"freq": 1}}
_CPU_OFFLOAD = {"optim_cpu_offload": True, "ac_offloading": {"max_inflight_activations": 1}}  # optimizer, activations
_EP_INFERENCE = {"vllm": {"tensor_parallel_size": 8, "enable_expert_parallel": True}}

PRESETS: tuple[Preset, ...] = (
    Preset(
        name="qwen3-30b-a3b",
        pattern=r"qwen3-30b-a3b",
        config={"trainer": {"model": {**_MOE_TRAINER}}, "inference": _EP_INFERENCE},
    ),
    Preset(
        name="qwen3-235b-a22b",
        pattern=r"qwen3-235b-a22b",
        config={
            # Case study 1: FSDP + EP8 with optimizer-state and activation offload to CPU.
            "trainer": {"model": {**_MOE_TRAINER, **_CPU_OFFLOAD}},
            "inference": _EP_INFERENCE,
            # The 2507 Thinking/Instruct ids are not in renderers' MODEL_RENDERER_MAP ("auto" is refused);
            # they share the Qwen3 chat template, as Qwen3-30B-A3B-Thinking-2507 (mapped to qwen3) does.
            "orchestrator": {"renderer": {"name": "qwen3"}},
        },
    ),
    Preset(
        name="glm-4.5-air",
        pattern=r"glm-4\.5-air",
        config={
            "trainer": {"model": {"impl": "custom", "cp": 4, "cp_style": "ulysses", "ac": {"freq": 1}}},
            "inference": _EP_INFERENCE,
        },
    ),
    Preset(
        name="glm-5",
        pattern=r"glm-5(?![\d.]*-air)",
        config={
            # Case study 2: FSDP + CP2 + EP8, optimizer offload; generation PD-disaggregated with wide EP.
            "trainer": {"model": {**_MOE_TRAINER, "cp": 2, **_CPU_OFFLOAD}},
            "inference": {"vllm": {"enable_expert_parallel": True}},
        },
        gpus_per_replica=64,
        pd_disaggregated=True,
        generation_model="zai-org/GLM-5-FP8",
    ),
)


def preset_by_name(name: str) -> Preset:
    for preset in PRESETS:
        if preset.name == name:
            return preset
    raise KeyError(name)


def preset_for_model(model: str) -> Preset | None:
    """The preset whose pattern matches the model id (e.g. Qwen/Qwen3-235B-A22B-Thinking-2507), if any."""
    for preset in PRESETS:
        if re.search(preset.pattern, model, re.I):
            return preset
    return None
