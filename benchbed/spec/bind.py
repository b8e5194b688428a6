"""Binding a pure spec to the registries: each plug-in table validated by its owner's options model (an adapter's
table, a launcher's such as `[slurm]`), the sandbox backend checked to be registered. `build_spec`, `load_spec`
and `expand` give bound specs; every problem is one SpecError phrase naming the file, the field and what was
expected."""

from __future__ import annotations

import copy
import difflib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from benchbed.adapter import ADAPTERS, Adapter, get_adapter, table_names, table_owner
from benchbed.errors import BenchbedError, SpecError
from benchbed.launch.base import LAUNCHERS, Launcher
from benchbed.registry import Registry
from benchbed.sandbox.registry import BACKENDS
from benchbed.spec.model import (
    MAX_MATRIX_POINTS,
    ExperimentSpec,
    apply_overrides,
    load_spec_data,
    parse_spec,
    set_dotted,
    validation_problems,
)


@dataclass(frozen=True)
class Registries:
    """What a spec is bound against: the adapters, launchers and sandbox backends registered."""

    adapters: Registry[type[Adapter]] = ADAPTERS
    launchers: Registry[type[Launcher]] = LAUNCHERS
    backends: Registry[type] = BACKENDS

    def launcher_model(self, name: str) -> type[BaseModel] | None:
        """The options model of the launcher `name`; None when it takes none or is not registered here."""
        if name not in self.launchers:
            return None
        try:
            return self.launchers.load(name).options_model
        except BenchbedError:  # a launcher that cannot load owns no table; choosing it fails with this error
            return None


@dataclass
class Bound:
    """A bound spec's options: table -> its validated model, plus the registries for tables the spec lacks."""

    registries: Registries
    options: dict[str, BaseModel] = field(default_factory=dict)
    launcher_tables: tuple[str, ...] = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Bound:
        return Bound(self.registries, copy.deepcopy(self.options, memo), self.launcher_tables)

    def table_of(self, adapter: str) -> str:
        return get_adapter(adapter).table

    def adapter_options(self, name: str, source: str) -> Any:
        adapter = get_adapter(name)
        if adapter.options_model is None:
            return None
        if adapter.table not in self.options:  # an absent table of another adapter: its defaults
            self.options[adapter.table] = _validated(adapter.options_model, {}, adapter.table, source)
        return self.options[adapter.table]

    def launcher_options(self, name: str, source: str) -> Any:
        model = self.registries.launcher_model(name)
        if model is None:
            return None
        if name not in self.options:  # no table: the launcher's defaults
            self.options[name] = _validated(model, {}, name, source)
        return self.options[name]

    def launcher_dumps(self) -> dict[str, Any]:
        """The launcher tables the spec gives, defaults filled in (as they join the spec id)."""
        return {table: self.options[table].model_dump(mode="json") for table in self.launcher_tables}


def _validated(model: type[BaseModel], table: dict[str, Any], prefix: str, source: str) -> BaseModel:
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        raise SpecError("; ".join(f"{source}: {p}" for p in validation_problems(exc, prefix=prefix))) from None


def check_tables(spec: ExperimentSpec, registries: Registries) -> tuple[Bound, list[str]]:
    """Each plug-in table validated by its owner's options model: (the bound options, problems), one dotted-path
    phrase per problem. The spec's own adapter's table is validated even when absent (its model may require
    fields); other empty tables are skipped; a table no registered adapter or launcher owns is a problem."""
    tables = spec.model_extra or {}
    own = get_adapter(spec.adapter).table if spec.adapter in registries.adapters else None
    bound, problems, launchers = Bound(registries), [], []
    for name, table in {**({own: {}} if own else {}), **tables}.items():
        if not isinstance(table, dict):
            problems.append(f"field '{name}': expected a table of {name!r} options (got {table!r})")
            continue
        launcher_model = registries.launcher_model(name)
        if launcher_model is not None:
            launchers.append(name)
            try:
                bound.options[name] = launcher_model.model_validate(table)
            except ValidationError as exc:
                problems.extend(validation_problems(exc, prefix=name))
            continue
        if not table and name != own:
            continue
        owner = table_owner(name, spec.adapter)
        if owner is None:
            known = sorted({*table_names(), *(n for n in registries.launchers.names() if registries.launcher_model(n))})
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(f"unknown field '{name}' (not a spec field or a registered adapter's table){hint}")
        elif owner.options_model is None:
            problems.extend(f"unknown field '{name}.{key}' (adapter {owner.name!r} takes no options)" for key in table)
        else:
            try:
                bound.options[name] = owner.options_model.model_validate(table)
            except ValidationError as exc:
                problems.extend(validation_problems(exc, prefix=name))
    bound.launcher_tables = tuple(launchers)
    backend = spec.sandbox.backend
    if backend != "none" and backend not in registries.backends:
        known = ", ".join(repr(k) for k in ["none", *registries.backends.names()])
        problems.insert(0, f"field 'sandbox.backend': expected one of {known} (got {backend!r})")
    return bound, problems


def bind(spec: ExperimentSpec, registries: Registries | None = None) -> ExperimentSpec:
    """`spec` with its plug-in tables validated against `registries` (default: everything registered here)."""
    bound, problems = check_tables(spec, registries or Registries())
    if problems:
        raise SpecError("; ".join(f"{spec.source}: {p}" for p in problems))
    spec._bound = bound
    return spec


def build_spec(data: dict[str, Any], source: str = "<spec>") -> ExperimentSpec:
    """The spec `data`, validated and bound (see parse_spec, bind)."""
    return bind(parse_spec(data, source))


def load_spec(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExperimentSpec:
    """Read a TOML spec, apply `--set` overrides, validate and bind. The matrix is kept (see expand)."""
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
