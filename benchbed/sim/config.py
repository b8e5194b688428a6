"""The `[sim]` spec table: generator/trainer shape, latency and pass-rate distributions, mode."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_CONCURRENCY = 1_000_000  # generator slots; each costs memory in the simulator, and real runs use far fewer


class _Strict(BaseModel):
    # strict: `true` is not a concurrency; allow_inf_nan: an infinite latency or sync time can only fail later
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Latency(_Strict):
    """Seconds per sample: lognormal(mean, cv), an empirical list sampled with replacement, or fixed."""

    dist: Literal["lognormal", "empirical", "fixed"] = "lognormal"
    mean: float = Field(60.0, gt=0)
    cv: float = Field(0.5, ge=0)
    values: list[float] | None = None

    @model_validator(mode="after")
    def _check_values(self) -> Latency:
        if self.dist == "empirical":
            if not self.values:
                raise ValueError("empirical latency needs a non-empty 'values' list")
            if any(v <= 0 for v in self.values):
                raise ValueError("empirical latencies must be positive")
        return self


class PassRate(_Strict):
    """Per-prompt probability that a sample is rewarded: Beta(a, b) per prompt, a fixed p, or a mixture of
    prompts always solved (p = 1), never solved (p = 0) and the rest from Beta(a, b)."""

    dist: Literal["beta", "fixed", "mixture"] = "beta"
    a: float = Field(1.0, gt=0)
    b: float = Field(1.0, gt=0)
    p: float = Field(0.5, ge=0, le=1)
    always: float = Field(0.0, ge=0, le=1, description="mixture: share of prompts solved by every sample")
    never: float = Field(0.0, ge=0, le=1, description="mixture: share of prompts no sample solves")

    @model_validator(mode="after")
    def _check_mixture(self) -> PassRate:
        if self.always + self.never > 1:
            raise ValueError(f"always + never must be at most 1 (got {self.always} + {self.never})")
        return self


class Spread(_Strict):
    """A positive random quantity: lognormal with this mean and coefficient of variation (cv = 0: fixed)."""

    mean: float = Field(gt=0)
    cv: float = Field(0.0, ge=0)


class Turns(_Strict):
    """Multi-turn tool use: environment time per tool call added to the LLM time (`latency`) of a sample."""

    count: float = Field(gt=0, description="tool calls per sample (mean when dist = poisson)")
    dist: Literal["fixed", "poisson"] = "fixed"
    env_s: Spread = Field(description="seconds of environment time per tool call")


class Tokens(_Strict):
    """Token counts: a fixed prompt length and a response length proportional to the sample's LLM time
    (mean response at mean LLM time); responses longer than workload.max_response_tokens are truncated,
    and so is their LLM time."""

    prompt: int = Field(gt=0)
    response_mean: float = Field(gt=0)


class Saturation(_Strict):
    """Inference engines that are throughput-bound past `seqs_per_engine` concurrent sequences: LLM time
    grows by max(1, concurrency / (engines × seqs_per_engine))."""

    engines: int = Field(gt=0)
    seqs_per_engine: float = Field(gt=0)


class Decode(_Strict):
    """Continuous-batching decode: a sequence's speed falls with the sequences decoding beside it on its engine.

    One decode iteration of an engine running b sequences takes `step_s + step_s_per_seq x b` seconds and gives each
    sequence one token: `step_s` reads the weights once per iteration (memory-bound, independent of b),
    `step_s_per_seq` reads each sequence's KV cache and does its compute (the roofline of LLM decoding: Orca, OSDI
    2022, and vLLM, arXiv 2309.06180, section 2; Seer, arXiv 2511.14617, on long-tail rollouts). A sample's drawn
    latency is its time alone on an engine (b = 1); with b running it progresses at (step_s + step_s_per_seq) /
    (step_s + step_s_per_seq x b) of that speed. Samples go to the least-loaded of `engines` engines."""

    engines: int = Field(gt=0, description="inference engines (data-parallel replicas) sharing the generator slots")
    step_s: float = Field(gt=0, description="seconds of a decode iteration independent of the batch (weight reads)")
    step_s_per_seq: float = Field(ge=0, description="seconds a decode iteration adds per running sequence")
    reprefill_s_per_token: float = Field(
        0.0,
        ge=0,
        description="seconds an engine spends prefilling one token again when an aborted sequence resumes on it "
        "(its prompt plus the tokens it had generated, from `sim.tokens`; KV cache discarded at the abort); the "
        "engine decodes nothing meanwhile (compute-bound prefill: 2 x parameters FLOPs per token / (peak x MFU))",
    )


class Oversample(_Strict):
    """Batch-filling generator: dispatch factor × the groups a step needs, train the first to finish.

    The rest: `discard` (left to finish, then discarded), `carry` (used for the next batch) or `partial`
    (aborted when the batch fills, buffered, resumed first in the next batch with a re-prefill cost)."""

    factor: float = Field(1.0, ge=1.0)
    policy: Literal["discard", "carry", "partial"] = "discard"
    requeue_in_quota: bool = Field(
        False,
        description="partial: a buffered group takes one of a round's factor x B/G places every round it resumes in, "
        "so every round runs exactly that many groups (slime's Buffer.get_samples pops the buffer first and tops up "
        "from the dataset); false: a group counts against a round's quota only the first time it is aborted",
    )

    @model_validator(mode="after")
    def _check_requeue(self) -> Oversample:
        if self.requeue_in_quota and self.policy != "partial":
            raise ValueError("requeue_in_quota needs policy = 'partial' (only aborted groups are resumed in a round)")
        return self


class Sandbox(_Strict):
    """A sandbox started on each sample's critical path before its first token.

    Creates are throttled to `create_rate` per second and at most `max_starting` start at once; a start fails
    (`start_timeout`) when queueing plus start-up exceed `start_timeout_s`, and (`no_capacity`, after the
    timeout: init dead) when `account_limit` sandboxes are already alive. Failed inits are retried with
    exponential backoff up to `max_retries` (policy retry) and then become reward-0 masked samples."""

    start_s: Spread = Field(default_factory=lambda: Spread(mean=2.0, cv=0.5))
    create_rate: float | None = Field(None, gt=0, description="creates per second the provider accepts")
    max_starting: int | None = Field(None, gt=0)
    account_limit: int | None = Field(None, gt=0, description="live sandboxes the account allows")
    start_timeout_s: float = Field(300.0, gt=0)
    fail_p: float = Field(0.0, ge=0, le=1, description="failure probability of any start")
    policy: Literal["retry", "mask"] = "retry"
    max_retries: int = Field(2, ge=0)
    backoff_s: float = Field(10.0, ge=0)


class EarlyPrune(_Strict):
    """Early pruning (ARRoL, arXiv 2603.24840): a predictor stops some of each group's rollouts mid-generation once
    it judges they add no learning signal. The pruned samples free their slots early and are not trained, and the
    trainer's compute shrinks with the samples it trains (ARRoL re-batches the survivors)."""

    fraction: float = Field(gt=0, lt=1, description="share of each group's samples pruned (rounded to whole samples)")
    at: float = Field(gt=0, le=1, description="share of its generation time a pruned sample runs before it stops")


class Prefill(_Strict):
    """Prefill of each turn's new context (the prompt, then each tool result) and where it runs.

    Aggregated serving: a sample's prefills run on the engine it decodes on and stall the whole decode batch there,
    so a sample waits through its own prefills and those of the `decode_batch - 1` others sharing its engine (each
    prefilling as often): per prefill `turn_s x decode_batch`. Disaggregated: prefills run on a separate pool and
    each turn's KV cache moves to the decode pool: per prefill `turn_s + kv_transfer_s`. A sample prefills once
    plus once per tool call."""

    turn_s: float = Field(gt=0, description="seconds to prefill one turn's new context")
    decode_batch: int = Field(1, gt=0, description="sequences decoding together on one engine (aggregated)")
    disaggregated: bool = False
    kv_transfer_s: float = Field(0.0, ge=0, description="disaggregated: seconds to move one turn's KV cache")

    def per_prefill_s(self) -> float:
        """Seconds one prefill adds to a sample's time."""
        return self.turn_s + self.kv_transfer_s if self.disaggregated else self.turn_s * self.decode_batch


class Validation(_Strict):
    """A validation pass on the generator's GPUs after every `every_pushes`-th weight push: the generator stays
    paused `seconds` after that push, and the trainer's next push waits for it to end (verl fully_async's
    `update_param_version` validates every `rollout.test_freq` versions before `resume`; `wait_last_valid`). In
    sync mode the next batch's generation, and so the next step, starts `seconds` later (colocated validation)."""

    every_pushes: int = Field(gt=0, description="weight pushes between validations (verl: rollout.test_freq)")
    seconds: float = Field(gt=0, description="seconds one validation pass holds the generator")


class TrainTimeDrift(_Strict):
    """The trainer's compute per step drifting over a run, by blocks of weight pushes: the steps of policy versions in
    block k (pushes [k x every_pushes, (k + 1) x every_pushes)) take `train_step_time x factors[k]`, the last factor
    holding after the list. The tokens a step trains change as the policy's response lengths drift, and its compute
    (log-probs and updates) scales with them; generation is unchanged (a cap-bound generation barely moves)."""

    every_pushes: int = Field(gt=0, description="weight pushes per block (a colocated run pushes every step)")
    factors: list[float] = Field(
        min_length=1, description="each block's trainer compute relative to train_step_time (dimensionless)"
    )

    @model_validator(mode="after")
    def _check_factors(self) -> TrainTimeDrift:
        if any(f <= 0 for f in self.factors):
            raise ValueError("factors must be positive")
        return self


class SimConfig(_Strict):
    mode: Literal["sync", "one_step_off", "async"] = "async"
    staleness_policy: Literal["count", "drop"] = "count"
    concurrency: int = Field(256, gt=0, le=MAX_CONCURRENCY, description="generator sample slots")
    latency: Latency = Field(default_factory=Latency)
    train_step_time: float = Field(20.0, gt=0, description="seconds of trainer compute per step")
    train_time_drift: TrainTimeDrift | None = None
    weight_sync_time: float = Field(0.0, ge=0)
    pass_rate: PassRate = Field(default_factory=PassRate)
    filter_zero_adv: bool = False
    seed: int = Field(0, ge=0, le=2**63 - 1, description="random seed (numpy needs a non-negative integer)")
    turns: Turns | None = None
    tokens: Tokens | None = None
    saturation: Saturation | None = None
    decode: Decode | None = None
    oversample: Oversample | None = None
    update_weights_interval: int = Field(1, gt=0, description="steps between weight pushes to the generator")
    staleness_threshold: float | None = Field(
        None,
        ge=0,
        description="verl fully_async: per weight push the generator may start (1 + threshold) pushes' worth of "
        "samples, counted from the last push (async count mode; replaces workload.max_staleness for admission)",
    )
    max_groups_in_flight: int | None = Field(
        None,
        gt=0,
        description="groups (prompts) the generator runs at once; a group holds its place until its last sample "
        "finishes (verl fully_async: max_concurrent_samples = 16 prompts per rollout server)",
    )
    fetch_s_per_sample: float = Field(
        0.0,
        ge=0,
        description="seconds per sample the trainer spends taking its batch from the queue and assembling it before "
        "its compute, counted as waiting for data (verl fully_async's `gen` timer covers it)",
    )
    abort_on_weight_push: bool = Field(False, description="abort in-flight samples at each push; resume them later")
    pause_on_weight_push: bool = Field(
        False,
        description="the generator stops when a push's weight sync starts (in-flight samples aborted into the "
        "buffer) and resumes when it ends, `weight_sync_time` later (verl fully_async: sync_weights pauses the "
        "rollouter)",
    )
    validation: Validation | None = None
    drain_on_weight_push: bool = Field(
        False,
        description="a push waits for every in-flight sample to finish under the old weights, and the generator "
        "starts nothing new until then (a weight update without interruptible generation)",
    )
    train_contention: float = Field(
        0.0,
        ge=0,
        description="fraction by which a training step's compute slows while the generator decodes beside it "
        "(shared host, memory or interconnect): the compute runs at 1 / (1 + train_contention) of its speed while "
        "samples are in flight and at full speed while none are",
    )
    reprefill_fraction: float = Field(
        0.0, ge=0, description="a resumed sample's extra time, as a fraction of the time it had generated"
    )
    sandbox: Sandbox | None = None
    early_prune: EarlyPrune | None = None
    prefill: Prefill | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: object) -> object:
        """Allow `pass_rate = 0.3` and `latency = 60.0` as shorthands for fixed values."""
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("pass_rate"), int | float):
                data["pass_rate"] = {"dist": "fixed", "p": data["pass_rate"]}
            if isinstance(data.get("latency"), int | float):
                data["latency"] = {"dist": "fixed", "mean": data["latency"]}
        return data

    @model_validator(mode="after")
    def _check_decode(self) -> SimConfig:
        if self.decode is not None:
            clash = [name for name in ("saturation", "turns", "sandbox", "prefill") if getattr(self, name) is not None]
            if clash:
                raise ValueError(f"decode models LLM time alone; it cannot be combined with {', '.join(clash)}")
            if self.decode.reprefill_s_per_token > 0 and self.tokens is None:
                raise ValueError("decode.reprefill_s_per_token needs sim.tokens (the tokens a resumed sequence holds)")
        return self

    @model_validator(mode="after")
    def _check_drain(self) -> SimConfig:
        if self.drain_on_weight_push and (self.mode != "async" or self.abort_on_weight_push):
            raise ValueError("drain_on_weight_push needs mode = 'async' and abort_on_weight_push = false")
        return self

    @model_validator(mode="after")
    def _check_pause(self) -> SimConfig:
        if self.pause_on_weight_push and (self.mode != "async" or not self.abort_on_weight_push):
            raise ValueError("pause_on_weight_push needs mode = 'async' and abort_on_weight_push = true")
        if self.validation is not None and not (self.pause_on_weight_push or self.mode == "sync"):
            raise ValueError("validation needs pause_on_weight_push = true or mode = 'sync' (it holds the generator)")
        return self

    @model_validator(mode="after")
    def _check_drift(self) -> SimConfig:
        if self.train_time_drift is not None and not math.isfinite(
            self.train_step_time * max(self.train_time_drift.factors)
        ):
            raise ValueError("train_step_time x the largest train_time_drift factor is not a finite number of seconds")
        return self

    @model_validator(mode="after")
    def _check_threshold(self) -> SimConfig:
        if self.staleness_threshold is not None and (self.mode != "async" or self.staleness_policy != "count"):
            raise ValueError("staleness_threshold needs mode = 'async' and staleness_policy = 'count'")
        return self
