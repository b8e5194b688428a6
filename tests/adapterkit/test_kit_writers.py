"""The kit's writers of framework configs keep every string a string: YAML (`yaml_text`, read back by PyYAML and by
OmegaConf), TOML (`toml_text`, read back by tomllib) and Hydra overrides (`hydra_value`, read back by Hydra's
override parser)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from benchbed.adapterkit.hydra import hydra_overrides, hydra_value
from benchbed.adapterkit.templates import toml_text, yaml_text
from benchbed.errors import SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

omegaconf = pytest.importorskip("omegaconf", reason="OmegaConf and Hydra come with the `verl` extra")
from hydra.core.override_parser.overrides_parser import OverridesParser  # noqa: E402

AMBIGUOUS = ["0E0", "1e3", "-2E+5", ".5", "1.", "0o17", "0x10", "1_000", "12:30", "yes", "No", "on", "off", "y",
             "null", "Null", "~", "", "true", "False", ".inf", "-.INF", ".nan", "nan", "inf", "123", "+1"]  # fmt: skip


def omegaconf_reads(text: str) -> Any:
    return omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.create(text))


def hydra_reads(argument: str) -> Any:
    """The value as verl gets it: Hydra's override parser, then OmegaConf resolving interpolations."""
    (override,) = OverridesParser.create().parse_overrides([argument])
    return omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.create({"v": override.value()}), resolve=True)["v"]


@pytest.mark.parametrize("text", AMBIGUOUS)
def test_a_string_yaml_would_misread_stays_a_string_in_yaml(text: str) -> None:
    written = yaml_text({"model": text, "nested": [text]})
    assert yaml.safe_load(written) == {"model": text, "nested": [text]}
    assert omegaconf_reads(written) == {"model": text, "nested": [text]}


@pytest.mark.parametrize("text", AMBIGUOUS)
def test_a_string_yaml_would_misread_stays_a_string_in_toml(text: str) -> None:
    written = toml_text({"model": {"name": text, "names": [text]}})
    assert tomllib.loads(written) == {"model": {"name": text, "names": [text]}}


def test_toml_text_leaves_out_none_and_keeps_numbers_numbers() -> None:
    written = toml_text({"a": 1, "b": None, "c": {"d": 0.5, "e": None}, "f": [True]})
    assert written == "a = 1\nf = [\n    true,\n]\n\n[c]\nd = 0.5\n"


def test_yaml_text_keeps_numbers_numbers_and_the_key_order() -> None:
    written = yaml_text({"b": 1, "a": 0.5, "c": None, "d": True, "e": "Qwen/Qwen3-4B"})
    assert written == "b: 1\na: 0.5\nc: null\nd: true\ne: Qwen/Qwen3-4B\n"


@example("0E0")
@example("~")
@example("${oc.env:HOME}")
@given(st.text(max_size=12))
def test_any_string_round_trips_through_yaml_text_and_toml_text(text: str) -> None:
    assert yaml.safe_load(yaml_text({"k": text})) == {"k": text}
    assert tomllib.loads(toml_text({"k": text})) == {"k": text}


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "true"), (None, "null"), (["console", "file"], "[console,file]"), (1e-6, "1e-06"),
     ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B"), ("a b,c", "'a b,c'"), ("it's", "'it\\'s'"), ("yes", "'yes'"),
     ("0E0", "'0E0'"), ({"a": 1, "b": "x"}, "{a:1,b:x}")],
)  # fmt: skip
def test_hydra_value(value: Any, text: str) -> None:
    assert hydra_value(value) == text


HYDRA_SPECIAL = ["a b", "it's", "${x}", "c:\\dir\\", "[x]", "é", "back\\slash", "${oc.env:HOME}"]


@pytest.mark.parametrize("text", [t for t in AMBIGUOUS if t] + HYDRA_SPECIAL)
def test_a_string_hydra_would_misread_stays_a_string(text: str) -> None:
    assert hydra_reads(f"k={hydra_value(text)}") == text


@example("0E0")
@example("x\\")
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), min_size=1, max_size=12))
def test_any_string_round_trips_through_a_hydra_override(text: str) -> None:
    if text == "???":
        with pytest.raises(SpecError, match="missing-value marker"):
            hydra_value(text)
        return
    assert hydra_reads(f"k={hydra_value(text)}") == text


def test_overrides_keep_their_order_and_name_the_table_of_a_bad_key() -> None:
    assert hydra_overrides({"b.c": 1, "a": "x y"}) == ["b.c=1", "a='x y'"]
    with pytest.raises(SpecError, match=r"^\[skyrl\]: table key '1x'"):
        hydra_overrides({"k": {"1x": 1}}, "[skyrl]")
