"""The pure experiment spec (docs/reference/spec.md): TOML -> pydantic, --set overrides, matrix points, spec_id.
Nothing here knows the registries: the plug-in tables (an adapter's, a launcher's) are kept as written until
`benchbed.spec.bind` validates them against what is registered."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

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


class StrictTable(BaseModel):
    """A spec table: unknown fields, coerced types and inf/nan are refused."""

    # strict: `true` or "10" is not a number of steps; allow_inf_nan: inf/nan cannot pass as a size or a time
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Workload(StrictTable):
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


class Resources(StrictTable):
    trainer_gpus: int = Field(8, ge=0)
    generator_gpus: int = Field(8, ge=0)
    gpus_per_node: int = Field(8, gt=0)
    colocated: bool = False
    gpu: str = Field("H200", description="accelerator model, for records and presets")
    price_per_gpu_hour: float | None = Field(None, ge=0, description="$ per GPU-hour, for the cost metrics")
    trainer_price_per_gpu_hour: float | None = Field(None, ge=0, description="overrides the price for trainer GPUs")
    generator_price_per_gpu_hour: float | None = Field(None, ge=0, description="overrides it for generator GPUs")


class QualityTable(StrictTable):
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


class SandboxTable(StrictTable):
    """`[sandbox]`: which sandbox provider the run uses and how it starts sandboxes (the sandbox-bench adapter
    and frameworks that start coding sandboxes read it)."""

    backend: str = Field("none", description="a registered sandbox backend (local, modal, prime, ...) or none")
    max_starting: int | None = Field(None, gt=0, description="cap on sandboxes in the starting state")
    start_timeout_s: float | None = Field(None, gt=0)
    image: str | None = None


# Part of the spec-id format, not a list of adapters: ids hash these six tables, as {} when a spec has none,
# because every spec carried them before adapters owned their tables; so existing ids stay valid.
ID_EMPTY_TABLES: tuple[str, ...] = ("local", "prime_rl", "sandbox_bench", "sim", "slime", "verl")


class ExperimentSpec(StrictTable):
    """A declarative experiment: the neutral core below, plus one table per plug-in that takes options (an adapter's,
    e.g. `[verl]`, or a launcher's, e.g. `[slurm]`), each validated once by the options model of its registered
    owner when the spec is bound (`benchbed.spec.bind`); read a table with `adapter_table()`, its validated options
    with `adapter_options()` or `launcher_options()`."""

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
    matrix: dict[str, list[Any]] = Field(
        default_factory=dict, description="dotted field -> list of values; expands to one spec per combination"
    )
    variant: dict[str, Any] = Field(default_factory=dict, description="the matrix point this spec was expanded from")
    _source: str = PrivateAttr(default="<spec>")
    _repeat: int = PrivateAttr(default=0)
    _bound: Any = PrivateAttr(default=None)  # benchbed.spec.bind.Bound: the owners' validated options

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

    def _binding(self) -> Any:
        if self._bound is None:
            raise SpecError(f"{self.source}: the spec is not bound to the registries (benchbed.spec.bind)")
        return self._bound

    def adapter_table(self, name: str | None = None) -> dict[str, Any]:
        """The table `name` as written (default: the table of this spec's adapter), {} when the spec has none."""
        return (self.model_extra or {}).get(name or self._binding().table_of(self.adapter)) or {}

    def adapter_options(self, name: str | None = None) -> Any:
        """The options model of the adapter `name` (default: this spec's adapter), filled from its table and
        validated when the spec was bound; None when the adapter declares no options model."""
        return self._binding().adapter_options(name or self.adapter, self.source)

    def launcher_options(self, name: str) -> Any:
        """The options model of the launcher `name` (its table, e.g. `[ray]`, validated when the spec was bound;
        its defaults when the spec has none); None when the launcher declares no options model."""
        return self._binding().launcher_options(name, self.source)


def normalized(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec as plain data with defaults filled in, minus fields that do not change what runs."""
    data = spec.model_dump(mode="json")
    data.pop("description", None)
    data.pop("matrix", None)
    data.pop("quality", None)  # how a run is judged, not what runs
    for key in ("price_per_gpu_hour", "trainer_price_per_gpu_hour", "generator_price_per_gpu_hour"):
        if data["resources"].get(key) is None:  # prices join the id only when given, so older ids stay valid
            data["resources"].pop(key, None)
    for table, value in spec.tables.items():  # an empty table changes nothing that runs
        if not value:
            data.pop(table, None)
    if spec._bound is not None:  # a launcher's table joins the id with its defaults filled in, when given
        data.update(spec._bound.launcher_dumps())
    return {**{table: {} for table in ID_EMPTY_TABLES}, **data}


def spec_id(spec: ExperimentSpec) -> str:
    """name + short hash of the normalized spec, so an edited spec never joins an old series."""
    digest = hashlib.sha256(json.dumps(normalized(spec), sort_keys=True).encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-") or "spec"
    return f"{slug}-{digest}"


def validation_problems(exc: ValidationError, prefix: str = "") -> list[str]:
    """One phrase per problem, naming the dotted path (under `prefix`) and what was expected."""
    lines = []
    for err in exc.errors():
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


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> ExperimentSpec:
    """The spec `data` validated as plain data (its plug-in tables as written); SpecError names every problem."""
    refuse_secrets(data, source)
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source)) from None
    spec._source = source
    return spec


def repeated(spec: ExperimentSpec) -> Iterator[ExperimentSpec]:
    """One copy of `spec` per repeat, each knowing its index (made as each launches); all share the spec_id."""
    for index in range(spec.repeats):
        one = spec.model_copy(deep=True)
        one._source, one._repeat, one._bound = spec.source, index, spec._bound
        yield one
