"""Launch templates kept as data in an adapter's package (a YAML config, a TOML table of flags), filled from a spec's
named values, so that a renderer holds only its checks and arithmetic and the framework's names stay in a data file.

A placeholder is `{name}` or `{name.attribute...}` in a string (a value or a key). A string that is one placeholder
and nothing else becomes the value itself, with its type (a number stays a number, a list a list, None null); a
placeholder inside a longer string is formatted in with `str()`. Substituted text is never read again, so a brace in
a value (a path, a model name) stays as it is."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w
import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from benchbed.spec.model import ExperimentSpec

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*(?:\.\w+)*)\}")


def spec_values(spec: ExperimentSpec, run_dir: Path | str, **computed: Any) -> dict[str, Any]:
    """The names a template may use: `workload`, `resources`, `options` (the spec's table of its adapter), `name`
    (the spec's), `run_dir` (as text), and the values the renderer computed (GPU ranges, batch arithmetic)."""
    return {
        "workload": spec.workload,
        "resources": spec.resources,
        "options": spec.adapter_options(),
        "name": spec.name,
        "run_dir": str(run_dir),
        **computed,
    }


def render_template(path: Path, values: Mapping[str, Any]) -> Any:
    """The template file at `path` (`.yaml` or `.toml`, read once per process) with its placeholders filled."""
    return fill(_load(Path(path)), values)


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """`template` (nested mappings and lists) with each placeholder in its strings, keys included, filled from
    `values`; a new structure, the template is not changed. An unknown name is a ValueError naming it."""
    if isinstance(template, Mapping):
        return {fill(key, values): fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(item, values) for item in template]
    if not isinstance(template, str):
        return template
    whole = PLACEHOLDER.fullmatch(template)
    if whole:
        return _lookup(values, whole.group(1))
    return PLACEHOLDER.sub(lambda match: str(_lookup(values, match.group(1))), template)


def sections(table: Mapping[str, Mapping[str, Any]], **conditions: bool) -> dict[str, Any]:
    """The entries of the sections of `table` whose condition holds, in the table's order: the section `always`,
    and each section named by a keyword argument that is true. A section no condition names is a ValueError."""
    unknown = set(table) - {"always", *conditions}
    if unknown:
        raise ValueError(f"template sections without a condition: {', '.join(sorted(unknown))}")
    chosen = [section for name, section in table.items() if name == "always" or conditions[name]]
    return {key: value for section in chosen for key, value in section.items()}


def argv(flags: Mapping[str, Any]) -> list[str]:
    """Command-line tokens for a table of flags, as argparse reads them: `--flag value` for each valued flag, then
    each flag whose value is `true` alone (a switch); a flag whose value is false or None is left out."""
    valued = {flag: value for flag, value in flags.items() if value is not None and not isinstance(value, bool)}
    switches = [flag for flag, value in flags.items() if value is True]
    return [token for flag, value in valued.items() for token in (flag, str(value))] + switches


def _lookup(values: Mapping[str, Any], name: str) -> Any:
    head, *attributes = name.split(".")
    try:
        value = values[head]
        for attribute in attributes:
            value = value[attribute] if isinstance(value, Mapping) else getattr(value, attribute)
    except (KeyError, AttributeError) as exc:
        raise ValueError(f"template placeholder {{{name}}}: no such value ({exc})") from exc
    return value


class _StringKeepingDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting also the strings that YAML 1.2 and OmegaConf read as numbers but PyYAML's
    YAML 1.1 rules do not (`0E0`, `1e3`, `0o17`, `.5`): a reader of either kind gets the string back."""


_StringKeepingDumper.add_implicit_resolver(  # OmegaConf's float forms (omegaconf/_utils.py get_yaml_loader, 2.3)
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
        r"|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_StringKeepingDumper.add_implicit_resolver(  # YAML 1.2 core schema's octal and hexadecimal integers
    "tag:yaml.org,2002:int", re.compile(r"^(?:0o[0-7]+|0x[0-9a-fA-F]+)$"), list("0")
)


def yaml_text(data: Any) -> str:
    """`data` as YAML in its own key order, every string quoted where a YAML 1.1, YAML 1.2 or OmegaConf reader
    would otherwise take it for a number, a boolean or null, so that a rendered config keeps strings strings."""
    return yaml.dump(data, Dumper=_StringKeepingDumper, sort_keys=False)


def toml_text(data: Mapping[str, Any]) -> str:
    """`data` as TOML (tomli-w: every string a quoted TOML string, any Unicode key or value, dates, nested tables);
    None values are left out, TOML having no null (a framework reads an absent key as its default)."""
    return tomli_w.dumps(_without_none(data))


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


@cache
def _load(path: Path) -> Any:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text(encoding="utf-8"))
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    raise ValueError(f"{path}: a template is a .yaml or .toml file")
