"""Suite files for `benchbed nightly`: named entries, each a spec with repeats, overrides and watched metrics."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchbed.errors import SpecError
from benchbed.metrics.registry import PRESENTATION
from benchbed.nightly.stats import metric_direction
from benchbed.record import Gate
from benchbed.spec import (
    MAX_REPEATS,
    ExperimentSpec,
    apply_overrides,
    build_spec,
    expand,
    format_validation_error,
    load_spec_data,
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class _Strict(BaseModel):
    # strict like spec fields: `repeats = "3"` or `true` is refused, not coerced
    model_config = ConfigDict(extra="forbid", strict=True)


class SuiteEntry(_Strict):
    name: str = Field(description="the series key, with the machine")
    spec: str = Field(description="spec file, relative to the suite file")
    repeats: int | None = Field(None, gt=0, le=MAX_REPEATS, description="runs per night (default: the spec's repeats)")
    set: list[str] = Field(default_factory=list, description="--set overrides for this entry's spec")
    watch: list[str] | None = Field(None, description="metrics gated each night (default: headline metrics)")
    gate: dict[str, Any] = Field(default_factory=dict, description="this entry's changes to the suite's [gate]")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("use letters, digits, '.', '_' and '-' (it names a series)")
        return value

    @field_validator("watch")
    @classmethod
    def _known_directed(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if name.removeprefix("framework_") not in PRESENTATION:
                raise ValueError(f"unknown metric {name!r}")
            if metric_direction(name) is None:
                raise ValueError(f"metric {name!r} has no better direction, so it cannot be gated")
        return value


class Suite(_Strict):
    name: str
    description: str = ""
    gate: Gate = Field(default_factory=Gate)
    entry: list[SuiteEntry] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("use letters, digits, '.', '_' and '-'")
        return value


def _entry_spec(where: str, entry: SuiteEntry, spec_path: Path, overrides: tuple[str, ...]) -> ExperimentSpec:
    """The entry's spec: the file, the entry's repeats and `set`, then the command line's --set. A problem the
    entry's `set` brings in is reported against the suite entry; one of the spec file's own, against the file."""
    data = load_spec_data(spec_path)
    clean = copy.deepcopy(data)
    sets = [*((f"repeats={entry.repeats}",) if entry.repeats else ()), *entry.set]
    apply_overrides(data, sets, f"{where}: set")
    apply_overrides(data, overrides)
    try:
        return build_spec(data, str(spec_path))
    except SpecError:
        apply_overrides(clean, overrides)
        build_spec(clean, str(spec_path))  # raises when the spec file (or the command line) is wrong by itself
    # the spec is valid without the entry's settings: they brought the problem in, so the error names the entry
    return build_spec(data, f"{where}: set = {sets}")


@dataclass(frozen=True)
class PlannedEntry:
    """One series of a suite: its key, the spec to run (a matrix point, with its repeats) and the metrics it
    watches (empty: those of DEFAULT_WATCH that its runs report)."""

    name: str
    spec: ExperimentSpec
    watch: tuple[str, ...]
    gate: Gate


def load_suite(path: Path, overrides: tuple[str, ...] = ()) -> tuple[Suite, list[PlannedEntry]]:
    """Read and validate a suite and every spec it names (with `overrides` applied to each) before anything runs.

    An entry whose spec has a [matrix] becomes one series per point, named `entry[field=value,...]`."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: suite file not found; pass a TOML suite such as experiments/nightly-cpu.toml")
    try:
        suite = Suite.model_validate(load_spec_data(path))
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, str(path))) from None
    names = [e.name for e in suite.entry]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"{path}: entry names must be unique (each names a series); repeated: {', '.join(duplicates)}")
    planned = []
    for index, entry in enumerate(suite.entry):
        try:
            gate = Gate.model_validate({**suite.gate.model_dump(), **entry.gate})
        except ValidationError as exc:
            raise SpecError(format_validation_error(exc, f"{path} (entry.{index}.gate)")) from None
        for name in gate.band:
            if metric_direction(name) is None:
                raise SpecError(f"{path}: entry {entry.name!r}: gate.band.{name}: not a metric with a better "
                                "direction (docs/reference/metrics.md); a band judges a direction")  # fmt: skip
            if entry.watch is not None and name not in entry.watch:
                raise SpecError(f"{path}: entry {entry.name!r}: gate.band.{name}: add it to the entry's watch "
                                f"({', '.join(entry.watch)}); only watched metrics are gated")  # fmt: skip
        spec_path = path.parent / entry.spec
        if not spec_path.exists():
            raise SpecError(f"{path}: entry {entry.name!r}: spec file {spec_path} not found")
        base = _entry_spec(f"{path} (entry {entry.name!r})", entry, spec_path, overrides)
        for spec in expand(base, str(spec_path)):
            label = ",".join(f"{k}={v}" for k, v in spec.variant.items())
            name = f"{entry.name}[{label}]" if label else entry.name
            planned.append(PlannedEntry(name, spec, tuple(entry.watch or ()), gate))
    return suite, planned
