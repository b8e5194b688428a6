"""The slurm launcher's options model: the spec's `[slurm]` table (validated when a spec is bound)."""

from __future__ import annotations

from pydantic import Field, field_validator

from benchbed.secrets import refuse_secret_env
from benchbed.spec.model import StrictTable


class SlurmOptions(StrictTable):
    """`[slurm]`: how `--launcher slurm` asks for the allocation; unset fields come from [resources] and timeout_s."""

    nodes: int | None = Field(None, gt=0, description="default: the [resources] GPUs over gpus_per_node")
    gpus_per_node: int | None = Field(None, ge=0, description="default: resources.gpus_per_node; 0 = no GPUs")
    time_limit: str | None = Field(
        None, pattern=r"^(\d+-)?\d+(:\d{1,2}){0,2}$", description="sbatch --time, e.g. 90 or 02:00:00 or 1-00:00:00"
    )
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    job_name: str | None = Field(None, description="default: the spec name")
    container_image: str | None = Field(None, description="pyxis/enroot image; the command runs in it via srun")
    container_mounts: list[str] = Field(default_factory=list, description="extra SRC:DST mounts; the run dir is one")
    env: dict[str, str] = Field(default_factory=dict, description="exported in the batch script (never secrets)")

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        return refuse_secret_env(env)

    sbatch_options: list[str] = Field(default_factory=list, description="extra #SBATCH lines, e.g. --exclusive")
    ray_cluster: bool | None = Field(
        None, description="start a Ray cluster over the allocation first; default: for `ray job submit` or >1 node"
    )
