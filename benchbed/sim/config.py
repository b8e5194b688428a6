"""The `[sim]` spec table: generator/trainer shape, latency and pass-rate distributions, mode."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    """Per-prompt probability that a sample is rewarded: Beta(a, b) per prompt, or a fixed p."""

    dist: Literal["beta", "fixed"] = "beta"
    a: float = Field(1.0, gt=0)
    b: float = Field(1.0, gt=0)
    p: float = Field(0.5, ge=0, le=1)


class SimConfig(_Strict):
    mode: Literal["sync", "one_step_off", "async"] = "async"
    staleness_policy: Literal["count", "drop"] = "count"
    concurrency: int = Field(256, gt=0, description="generator sample slots")
    latency: Latency = Field(default_factory=Latency)
    train_step_time: float = Field(20.0, gt=0, description="seconds of trainer compute per step")
    weight_sync_time: float = Field(0.0, ge=0)
    pass_rate: PassRate = Field(default_factory=PassRate)
    filter_zero_adv: bool = False
    seed: int = Field(0, ge=0, le=2**63 - 1, description="random seed (numpy needs a non-negative integer)")

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
