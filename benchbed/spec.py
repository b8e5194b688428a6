"""Experiment specs (docs/reference/spec.md): TOML -> pydantic, --set overrides, matrix expansion, spec_id."""

from __future__ import annotations

import copy
import difflib
import hashlib
import itertools
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from benchbed.adapter import Adapter, available_adapters, get_adapter, table_names, table_owner
from benchbed.errors import SpecError
from benchbed.secrets import is_secret_name, redact_mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


MAX_STEPS = 10_000_000  # far beyond any RL run; larger values are typos (or would overflow a framework's int)
# Counts that allocate (a launch, a spec copy per point or repeat): bounded at validation, far above real use.
MAX_REPEATS = 1_000
MAX_MATRIX_POINTS = 10_000


class _Strict(BaseModel):
    # strict: `true` or "10" is not a number of steps; allow_inf_nan: inf/nan cannot pass as a size or a time
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Workload(_Strict):
    """Framework-neutral description of the RL workload."""

    model: str = "Qwen/Qwen3-30B-A3B"
    prompts_per_step: int = Field(4, gt=0, description="prompts per trainer step")
    group_size: int = Field(16, gt=0, description="samples per prompt (GRPO group size G)")
    max_response_tokens: int = Field(4096, gt=0)
    max_seq_len: int | None = Field(None, gt=0, description="prompt + response token cap")
    max_staleness: int = Field(0, ge=0, le=MAX_STEPS, description="versions; 0 = synchronous")
    steps: int = Field(200, gt=0, le=MAX_STEPS, description="trainer steps")
    task: str = Field("math", description="environment family, e.g. math, swe, tool-use")

    @property
    def samples_per_step(self) -> int:
        return self.prompts_per_step * self.group_size


class Resources(_Strict):
    trainer_gpus: int = Field(8, ge=0)
    generator_gpus: int = Field(8, ge=0)
    gpus_per_node: int = Field(8, gt=0)
    colocated: bool = False
    gpu: str = Field("H200", description="accelerator model, for records and presets")
    price_per_gpu_hour: float | None = Field(None, ge=0, description="$ per GPU-hour, for the cost metrics")
    trainer_price_per_gpu_hour: float | None = Field(None, ge=0, description="overrides the price for trainer GPUs")
    generator_price_per_gpu_hour: float | None = Field(None, ge=0, description="overrides it for generator GPUs")


class QualityTable(_Strict):
    """`[quality]`: what the run must learn, for the learning metrics (time, steps and GPU-hours to the target)."""

    target: str = Field(description="NAME>=VALUE or NAME<=VALUE: 'reward>=0.5', 'eval/<validation score>>=0.3'")

    @field_validator("target")
    @classmethod
    def _readable(cls, value: str) -> str:
        from benchbed.quality import Target, TargetError

        try:
            return str(Target.parse(value))
        except TargetError as exc:
            raise ValueError(str(exc)) from None


class SandboxTable(_Strict):
    """`[sandbox]`: which sandbox provider the run uses and how it starts sandboxes (the sandbox-bench adapter
    and frameworks that start coding sandboxes read it)."""

    backend: str = Field("none", description="a registered sandbox backend (local, modal, prime, ...) or none")
    max_starting: int | None = Field(None, gt=0, description="cap on sandboxes in the starting state")
    start_timeout_s: float | None = Field(None, gt=0)
    image: str | None = None

    @field_validator("backend")
    @classmethod
    def _registered(cls, backend: str) -> str:
        from benchbed.sandbox.registry import available_backends

        known = ["none", *available_backends()]
        if backend not in known:
            raise ValueError(f"expected one of {', '.join(repr(k) for k in known)}")
        return backend


def _refuse_secrets(env: dict[str, str]) -> dict[str, str]:
    secret = sorted(k for k in env if is_secret_name(k))
    if secret:
        raise ValueError(f"{secret} look like secrets: they must come from the cluster's own environment, never "
                         "from a spec (specs are stored with every record)")  # fmt: skip
    return env


class SlurmSpec(_Strict):
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
        return _refuse_secrets(env)

    sbatch_options: list[str] = Field(default_factory=list, description="extra #SBATCH lines, e.g. --exclusive")
    ray_cluster: bool | None = Field(
        None, description="start a Ray cluster over the allocation first; default: for `ray job submit` or >1 node"
    )


class RaySpec(_Strict):
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
        return _refuse_secrets(env)


# Part of the spec-id format, not a list of adapters: ids hash these six tables, as {} when a spec has none,
# because every spec carried them before adapters owned their tables; so existing ids stay valid.
ID_EMPTY_TABLES: tuple[str, ...] = ("local", "prime_rl", "sandbox_bench", "sim", "slime", "verl")


class ExperimentSpec(_Strict):
    """A declarative experiment: the neutral core below, plus one table per adapter (e.g. `[verl]`), each
    validated once, when the spec is built, by the options model of the registered adapter that owns it (see
    `benchbed/adapter.py`); read a table with `adapter_table()`, its validated options with `adapter_options()`."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    adapter: str = Field(min_length=1)
    description: str = ""
    warmup_steps: int = Field(1, ge=0, description="steps excluded from the metric window")
    repeats: int = Field(1, gt=0, le=MAX_REPEATS, description="launches of each matrix point")
    timeout_s: float | None = Field(None, gt=0, description="wall-clock limit of a launch")
    workload: Workload = Field(default_factory=Workload)
    resources: Resources = Field(default_factory=Resources)
    sandbox: SandboxTable = Field(default_factory=SandboxTable)
    quality: QualityTable | None = Field(None, description="a quality target for the learning metrics")
    slurm: SlurmSpec | None = Field(None, description="--launcher slurm: the allocation")
    ray: RaySpec | None = Field(None, description="--launcher ray: job options")
    matrix: dict[str, list[Any]] = Field(
        default_factory=dict, description="dotted field -> list of values; expands to one spec per combination"
    )
    variant: dict[str, Any] = Field(default_factory=dict, description="the matrix point this spec was expanded from")
    _source: str = PrivateAttr(default="<spec>")
    _repeat: int = PrivateAttr(default=0)
    _options: dict[str, BaseModel] = PrivateAttr(default_factory=dict)  # table -> its validated options model

    @model_validator(mode="after")
    def _window_has_steps(self) -> ExperimentSpec:
        if "warmup_steps" in self.model_fields_set and self.warmup_steps >= self.workload.steps:
            raise ValueError(
                f"warmup_steps ({self.warmup_steps}) must be smaller than workload.steps ({self.workload.steps}): "
                "the metric window would hold no step"
            )
        return self

    @property
    def source(self) -> str:
        """Where the spec came from (file path, plus the matrix point), for error messages."""
        return self._source

    @property
    def repeat(self) -> int:
        """Index of this launch among the spec's `repeats` (0-based); not part of the spec, so not of spec_id."""
        return self._repeat

    @property
    def spec_id(self) -> str:
        return spec_id(self)

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        """Adapter tables by name, as written."""
        return dict(self.model_extra or {})

    def adapter_table(self, name: str | None = None) -> dict[str, Any]:
        """The table `name` as written (default: the table of this spec's adapter), {} when the spec has none."""
        return (self.model_extra or {}).get(name or get_adapter(self.adapter).table) or {}

    def adapter_options(self, name: str | None = None) -> Any:
        """The options model of the adapter `name` (default: this spec's adapter), filled from its table and
        validated when the spec was built; None when the adapter declares no options model."""
        adapter = get_adapter(name or self.adapter)
        if adapter.options_model is None:
            return None
        if adapter.table not in self._options:  # an absent table of another adapter: its defaults
            self._options[adapter.table] = options_of(adapter, {}, self.source)
        return self._options[adapter.table]

    @model_validator(mode="after")
    def _validate_adapter_tables(self) -> ExperimentSpec:
        options, problems = validate_tables(self.adapter, self.model_extra or {})
        if problems:
            raise PydanticCustomError("adapter_tables", "; ".join(problems), {"problems": problems})
        self._options = options
        return self


def normalized(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec as plain data with defaults filled in, minus fields that do not change what runs."""
    data = spec.model_dump(mode="json")
    data.pop("description", None)
    data.pop("matrix", None)
    data.pop("quality", None)  # how a run is judged, not what runs
    for table in ("slurm", "ray"):  # launcher tables join the id only when given, so older ids stay valid
        if data.get(table) is None:
            data.pop(table, None)
    for key in ("price_per_gpu_hour", "trainer_price_per_gpu_hour", "generator_price_per_gpu_hour"):
        if data["resources"].get(key) is None:  # prices join the id only when given, so older ids stay valid
            data["resources"].pop(key, None)
    for table, value in spec.tables.items():  # an empty table changes nothing that runs
        if not value:
            data.pop(table, None)
    return {**{table: {} for table in ID_EMPTY_TABLES}, **data}


def spec_id(spec: ExperimentSpec) -> str:
    """name + short hash of the normalized spec, so an edited spec never joins an old series."""
    digest = hashlib.sha256(json.dumps(normalized(spec), sort_keys=True).encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-") or "spec"
    return f"{slug}-{digest}"


def validate_tables(adapter_name: str, tables: dict[str, Any]) -> tuple[dict[str, BaseModel], list[str]]:
    """Each adapter table validated by its owner's options model: (table -> options, problems), one dotted-path
    phrase per problem. Each table must belong to a registered adapter and pass its options model; the spec's own
    adapter's table is validated even when absent (its model may require fields); other empty tables are skipped."""
    own = get_adapter(adapter_name).table if adapter_name in available_adapters() else None
    options: dict[str, BaseModel] = {}
    problems: list[str] = []
    for name, table in {**({own: {}} if own else {}), **tables}.items():
        if not isinstance(table, dict):
            problems.append(f"field '{name}': expected a table of {name!r} options (got {table!r})")
            continue
        if not table and name != own:
            continue
        owner = table_owner(name, adapter_name)
        if owner is None:
            close = difflib.get_close_matches(name, table_names(), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(f"unknown field '{name}' (not a spec field or a registered adapter's table){hint}")
        elif owner.options_model is None:
            problems.extend(f"unknown field '{name}.{key}' (adapter {owner.name!r} takes no options)" for key in table)
        else:
            try:
                options[name] = owner.options_model.model_validate(table)
            except ValidationError as exc:
                problems.extend(validation_problems(exc, prefix=name))
    return options, problems


def options_of(adapter: Adapter, table: dict[str, Any], source: str) -> BaseModel:
    """`table` validated by the adapter's options model; a SpecError in the one format of spec errors."""
    assert adapter.options_model is not None
    try:
        return adapter.options_model.model_validate(table)
    except ValidationError as exc:
        raise SpecError("; ".join(f"{source}: {p}" for p in validation_problems(exc, prefix=adapter.table))) from None


def validation_problems(exc: ValidationError, prefix: str = "") -> list[str]:
    """One phrase per problem, naming the dotted path (under `prefix`) and what was expected."""
    lines = []
    for err in exc.errors():
        if err["type"] == "adapter_tables":
            lines.extend(err["ctx"]["problems"])
            continue
        path = ".".join(str(p) for p in (*([prefix] if prefix else []), *err["loc"]))
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown field '{path}'")
        elif err["type"] == "missing":
            lines.append(f"missing required field '{path}'")
        else:
            message = err["msg"].removeprefix("Value error, ")  # a model's own check says what is wrong
            shown = redact_mapping(err.get("input"))  # a refused secret is named, never echoed
            lines.append(f"field '{path}': {message} (got {shown!r})" if path else message)
    return lines


def format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem: file, dotted path, what was expected."""
    return "; ".join(f"{source}: {line}" for line in validation_problems(exc))


def parse_override(text: str, where: str = "--set") -> tuple[str, Any]:
    """`a.b=v` -> ("a.b", value); the value is read as a TOML literal when it is one, else as a string.
    `where` says in errors where the override came from (the command line, or a suite entry's `set`)."""
    if "=" not in text:
        raise SpecError(f"{where} {text!r}: expected KEY=VALUE, e.g. workload.group_size=8")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise SpecError(f"{where} {text!r}: empty key; expected a dotted field like sim.concurrency")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...], where: str = "--set") -> None:
    """Apply `KEY=VALUE` overrides to spec data in place, in order (errors name `where`)."""
    for text in overrides:
        key, value = parse_override(text, where)
        try:
            set_dotted(data, key, value)
        except SpecError as exc:
            raise SpecError(f"{where} {text!r}: {exc}") from None


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise SpecError(f"cannot set {key!r}: {part!r} is a value, not a table")
        node = child
    node[parts[-1]] = value


def load_spec_data(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise SpecError(f"{path}: spec file not found; pass a TOML spec such as experiments/quickstart.toml")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read spec ({exc})") from exc


def refuse_secrets(data: dict[str, Any], source: str) -> None:
    """One policy for every adapter: a secret-named variable in an `env` table is refused (specs are stored
    with every record); secrets come from the environment the launch inherits, and are masked there by value."""
    for table, body in data.items():
        env = body.get("env") if isinstance(body, dict) else None
        found = sorted(k for k in env if is_secret_name(str(k))) if isinstance(env, dict) else []
        if found:
            raise SpecError(
                f"{source}: [{table}.env] sets {', '.join(found)}: secrets must come from the environment the run "
                "inherits (export them before benchbed, or set them in the Ray cluster's environment), never from "
                "a spec, which is stored with every record"
            )


def build_spec(data: dict[str, Any], source: str = "<spec>") -> ExperimentSpec:
    refuse_secrets(data, source)
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source)) from None
    spec._source = source
    return spec


def load_spec(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExperimentSpec:
    """Read a TOML spec, apply `--set` overrides, validate. The matrix is kept (see expand)."""
    data = load_spec_data(path)
    apply_overrides(data, overrides)
    return build_spec(data, str(path))


def expand(spec: ExperimentSpec, source: str = "<spec>") -> list[ExperimentSpec]:
    """One spec per combination of the matrix (cartesian product, in the order written)."""
    if not spec.matrix:
        return [spec]
    base = spec.model_dump(mode="json", exclude={"matrix", "variant"})
    keys = list(spec.matrix)
    for key in keys:
        if not spec.matrix[key]:
            raise SpecError(f"{source}: matrix.{key} is empty; give at least one value")
    points = math.prod(len(spec.matrix[k]) for k in keys)
    if points > MAX_MATRIX_POINTS:
        sizes = " x ".join(str(len(spec.matrix[k])) for k in keys)
        raise SpecError(f"{source}: [matrix] expands to {sizes} = {points:,} points; at most {MAX_MATRIX_POINTS:,}")
    out = []
    for values in itertools.product(*(spec.matrix[k] for k in keys)):
        data = copy.deepcopy(base)
        for key, value in zip(keys, values, strict=True):
            set_dotted(data, key, value)
        data["variant"] = dict(zip(keys, values, strict=True))
        out.append(build_spec(data, f"{source} (matrix point {data['variant']})"))
    return out


def repeated(spec: ExperimentSpec) -> Iterator[ExperimentSpec]:
    """One copy of `spec` per repeat, each knowing its index (made as each launches); all share the spec_id."""
    for index in range(spec.repeats):
        one = spec.model_copy(deep=True)
        one._source, one._repeat = spec.source, index
        yield one
