"""Experiment specs (docs/reference/spec.md): the pure model (`model`: TOML -> pydantic, overrides, spec_id) and its
binding to the registries (`bind`: each plug-in table validated by its owner). `build_spec`, `load_spec` and
`expand` return bound specs, ready to render and launch."""

from benchbed.spec.bind import Registries, bind, build_spec, expand, load_spec
from benchbed.spec.model import (
    MAX_MATRIX_POINTS,
    MAX_REPEATS,
    MAX_STEPS,
    ExperimentSpec,
    QualityTable,
    Resources,
    SandboxTable,
    StrictTable,
    Workload,
    apply_overrides,
    format_validation_error,
    load_spec_data,
    normalized,
    parse_override,
    parse_spec,
    repeated,
    set_dotted,
    spec_id,
    validation_problems,
)

__all__ = [
    "MAX_MATRIX_POINTS",
    "MAX_REPEATS",
    "MAX_STEPS",
    "ExperimentSpec",
    "QualityTable",
    "Registries",
    "Resources",
    "SandboxTable",
    "StrictTable",
    "Workload",
    "apply_overrides",
    "bind",
    "build_spec",
    "expand",
    "format_validation_error",
    "load_spec",
    "load_spec_data",
    "normalized",
    "parse_override",
    "parse_spec",
    "repeated",
    "set_dotted",
    "spec_id",
    "validation_problems",
]
