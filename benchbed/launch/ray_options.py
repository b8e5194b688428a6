"""The ray launcher's options model: the spec's `[ray]` table (validated when a spec is bound)."""

from __future__ import annotations

from pydantic import Field, field_validator

from benchbed.secrets import refuse_secret_env
from benchbed.spec.model import StrictTable


class RayOptions(StrictTable):
    """`[ray]`: Ray Job options for `--launcher ray`, layered over a plan's own `ray job submit` options."""

    address: str | None = Field(None, description="dashboard URL; --ray-address and RAY_ADDRESS take precedence")
    working_dir: str | None = Field(None, description="uploaded as the job's working_dir (only when given)")
    entrypoint_num_cpus: float | None = Field(None, ge=0)
    entrypoint_num_gpus: float | None = Field(None, ge=0)
    entrypoint_memory: int | None = Field(None, ge=0, description="bytes")
    entrypoint_resources: dict[str, float] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict, description="runtime_env env_vars (never secrets)")

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        return refuse_secret_env(env)
