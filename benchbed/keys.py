"""Closed vocabulary of canonical trace event keys (docs/reference/trace.md), with a one-line definition each."""

from __future__ import annotations

SCHEMA_VERSION = 1

TRAINER_STEP = "trainer.step"
TRAINER_WAIT = "trainer.wait"
TRAINER_COMPUTE = "trainer.compute"
TRAINER_WEIGHT_SYNC = "trainer.weight_sync"
TRAINER_CHECKPOINT = "trainer.checkpoint"
TRAINER_OTHER = "trainer.other"
ROLLOUT = "rollout"
ROLLOUT_GROUP = "rollout.group"
ROLLOUT_BUFFERED = "rollout.buffered"
GENERATOR_PAUSED = "generator.paused"
SANDBOX_QUEUE = "sandbox.queue"
SANDBOX_START = "sandbox.start"
SANDBOX_EXEC = "sandbox.exec"
SANDBOX_STOP = "sandbox.stop"
# Per-step counters for frameworks that log counts rather than one row per sample or group.
SAMPLES_FINISHED = "samples.finished"
SAMPLES_TRAINED = "samples.trained"
SAMPLES_ACCEPTED = "samples.accepted"
SAMPLES_DROPPED_STALE = "samples.dropped_stale"
GROUPS_FINISHED = "groups.finished"
GROUPS_ZERO_ADV = "groups.zero_adv"
SAMPLES_PARTIAL_BUFFERED = "samples.partial_buffered"
SAMPLES_TRAINED_TOKENS = "samples.trained_tokens"
SAMPLES_DECODED_TOKENS = "samples.decoded_tokens"
SAMPLES_OFF_POLICY_TOKENS = "samples.off_policy_tokens"
# What the run learned: the training reward per step and validation scores by name (quality.eval.<name>).
QUALITY_REWARD = "quality.reward_mean"
QUALITY_EVAL_PREFIX = "quality.eval."
# What the hardware did: one sample of one GPU (actor `gpu<i>`, as its sampler numbered it), at the time taken.
GPU_UTILIZATION = "gpu.utilization"
GPU_MEMORY_USED = "gpu.memory_used"
GPU_POWER = "gpu.power"
GPU_SM_CLOCK = "gpu.sm_clock"

KEYS: dict[str, str] = {
    TRAINER_STEP: "one training step, from the end of the previous step to the end of this one",
    TRAINER_WAIT: "trainer blocked because the next batch is not ready",
    TRAINER_COMPUTE: "log-prob recompute, forward/backward, optimizer",
    TRAINER_WEIGHT_SYNC: "publishing new weights to the generator",
    TRAINER_CHECKPOINT: "saving checkpoints",
    TRAINER_OTHER: "the rest of the step (validation, offload/onload, data loading)",
    ROLLOUT: "one sample: v_start, v_end, v_train, status, reward in attrs",
    ROLLOUT_GROUP: "a finished group: reward std, accepted or why not",
    ROLLOUT_BUFFERED: "a partial rollout waiting in the buffer between two generation segments: it holds no slot",
    GENERATOR_PAUSED: "free generator slots held back by admission (staleness bound, sync alternation, weight sync)",
    SANDBOX_QUEUE: "request waiting for an admission slot",
    SANDBOX_START: "create -> ready; status is ok or the failure reason",
    SANDBOX_EXEC: "one command in a sandbox",
    SANDBOX_STOP: "terminate -> resources released",
    SAMPLES_FINISHED: "agg: samples whose generation finished during the step",
    SAMPLES_TRAINED: "agg: samples the step trained on",
    SAMPLES_ACCEPTED: "agg: finished samples accepted for training (not filtered or dropped)",
    SAMPLES_DROPPED_STALE: "agg: finished samples dropped for staleness",
    GROUPS_FINISHED: "agg: groups whose last sample finished during the step",
    GROUPS_ZERO_ADV: "agg: finished groups whose rewards all agree (no gradient)",
    SAMPLES_PARTIAL_BUFFERED: "agg: in-flight samples aborted into the partial-rollout buffer during the step",
    SAMPLES_TRAINED_TOKENS: "agg: prompt + response tokens of the samples the step trained on",
    SAMPLES_DECODED_TOKENS: "agg: completion tokens of the requests that returned during the step, aborted ones too",
    SAMPLES_OFF_POLICY_TOKENS: "agg: tokens of the aborted segment before each resume started during the step",
    QUALITY_REWARD: "agg: mean training reward of the step's samples, as the framework logged it",
    GPU_UTILIZATION: "point: share of the sample period in which the GPU ran a kernel (NVML utilization, 0-1)",
    GPU_MEMORY_USED: "point: GPU memory in use, bytes",
    GPU_POWER: "point: GPU power draw, watts",
    GPU_SM_CLOCK: "point: GPU streaming-multiprocessor clock, MHz",
}
GPU_KEYS: tuple[str, ...] = (GPU_UTILIZATION, GPU_MEMORY_USED, GPU_POWER, GPU_SM_CLOCK)


def eval_key(name: str) -> str:
    """quality.eval.<name> for a validation score's name as a framework logs it: `/` as `.`, `@` as `_at_` (verl's
    MLflow logger writes `mean@1` as `mean_at_1`), so every tracker of a run gives the score one key."""
    return QUALITY_EVAL_PREFIX + name.replace("/", ".").replace("@", "_at_")


# A framework's own per-step aggregates, kept for cross-checks. `framework.<metric>` carries the
# framework's figure for one of benchbed's metric names (reported as `framework_<metric>`);
# `native.<key>` keeps any other native figure verbatim; `quality.eval.<name>` carries a validation score logged
# at the step, named as the framework names it.
AGG_PREFIXES: tuple[str, ...] = ("framework.", "native.", "staleness.", "idle.", QUALITY_EVAL_PREFIX)

TRAINER_COMPONENTS: tuple[str, ...] = (
    TRAINER_WAIT,
    TRAINER_COMPUTE,
    TRAINER_WEIGHT_SYNC,
    TRAINER_CHECKPOINT,
    TRAINER_OTHER,
)

KINDS: tuple[str, ...] = ("span", "point", "agg")

# Status of a rollout or rollout.group row (a closed vocabulary, checked by Trace.validate): trained (ok),
# finished but not trained (dropped_stale, filtered_zero_adv, discarded), or never finished (aborted, failed).
ROLLOUT_STATUSES: tuple[str, ...] = (
    "ok",
    "dropped_stale",
    "filtered_zero_adv",
    "discarded",
    "aborted",
    "failed",
)

# Sandbox failure reasons, normalised across providers.
SANDBOX_FAILURE_REASONS: tuple[str, ...] = (
    "rate_limited",
    "no_capacity",
    "start_timeout",
    "image_error",
    "oom",
    "exec_timeout",
    "lifetime_timeout",
    "lost",
    "auth",
    "internal",
)


def is_known_key(key: str) -> bool:
    """True if `key` is in the closed vocabulary or is a framework aggregate with an allowed prefix."""
    return key in KEYS or key.startswith(AGG_PREFIXES)
