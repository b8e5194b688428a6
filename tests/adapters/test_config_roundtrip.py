"""Every config renderer, fed random Unicode strings, keys, dates and nested tables, writes what the framework's
own reader reads back as the same values: tomllib for prime-rl's TOML and benchbed's calibrated specs, Hydra's
override parser plus OmegaConf for verl's command line, argparse for slime's. A value a format cannot carry is
refused with a SpecError naming it, never written wrong."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest
from benchbed.adapters.prime_rl.render import render_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbed.adapterkit.templates import toml_text
from benchbed.errors import SpecError
from benchbed.sim.calibrate import Calibration
from benchbed.spec import build_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
text = st.text(max_size=12)  # any Unicode scalar value (hypothesis leaves out lone surrogates, as TOML does)
times = st.times() | st.datetimes() | st.datetimes(timezones=st.just(dt.timezone.utc)) | st.dates()
toml_scalars = text | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.booleans() | times
toml_values = st.recursive(
    toml_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)


# ------------------------------------------------------------------------------------------------ prime-rl
def prime_rl_spec(config: dict[str, Any]) -> Any:
    return build_spec({
        "name": "toy", "adapter": "prime_rl",
        "workload": {"model": "Qwen/Qwen3-0.6B", "prompts_per_step": 4, "group_size": 8, "max_staleness": 2,
                     "steps": 20, "max_response_tokens": 1024},
        "resources": {"trainer_gpus": 1, "generator_gpus": 1, "gpus_per_node": 2, "colocated": False},
        "prime_rl": {"config": config},
    })  # fmt: skip


@SETTINGS
@given(config=st.dictionaries(text, toml_values, max_size=4))
def test_prime_rl_config_round_trips_through_tomllib(config: dict[str, Any]) -> None:
    rendered = render_config(prime_rl_spec(config))
    assert tomllib.loads(toml_text(rendered)) == rendered


def test_prime_rl_emoji_non_ascii_keys_and_dates_are_valid_toml() -> None:
    config = {"run_name": "nuit 🌙 café", "orchestrator": {"clé": {"x": 1}}, "started": dt.date(2026, 12, 1)}
    rendered = render_config(prime_rl_spec(config))
    text_out = toml_text(rendered)
    assert 'run_name = "nuit 🌙 café"' in text_out and '"clé"' in text_out
    parsed = tomllib.loads(text_out)
    assert parsed["run_name"] == "nuit 🌙 café" and parsed["orchestrator"]["clé"] == {"x": 1}
    assert parsed["started"] == dt.date(2026, 12, 1)


# ----------------------------------------------------------------------------------------- calibrated spec
param_values = st.recursive(
    toml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, min_size=1, max_size=3),
    max_leaves=6,
)


@SETTINGS
@given(
    name=text,
    params=st.lists(
        st.tuples(st.sampled_from(["workload", "resources", "sim"]), text, param_values, text), max_size=6
    ),  # fmt: skip
    empirical=st.lists(st.floats(0.1, 1e4), min_size=1, max_size=30),
)
def test_calibrated_spec_round_trips_through_tomllib(name: str, params: list, empirical: list[float]) -> None:
    cal = Calibration(name)
    for table, key, value, source in params:
        cal.set(table, key, value, source)
    cal.set("sim", "latency", {"dist": "empirical", "values": empirical}, "observed\nrollouts")
    assert tomllib.loads(cal.to_toml()) == cal.spec_data()


def test_a_calibrated_specs_newlines_and_odd_keys_are_escaped_with_comments_kept() -> None:
    cal = Calibration('run "one"\nsecond line')
    cal.set("sim", "odd key = é", {"a b": 1, "c": "x\ny"}, "fitted\nfrom 3 steps")
    out = cal.to_toml()
    assert tomllib.loads(out) == cal.spec_data()
    assert "  # fitted from 3 steps" in out


# ------------------------------------------------------------------------------------------------- verl
hydra = pytest.importorskip("hydra", reason="the verl extra (Hydra, OmegaConf) is not installed")
from hydra.core.override_parser.overrides_parser import OverridesParser  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

hydra_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
hydra_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | times
    | st.text(max_size=12).filter(lambda s: s != "???")
)  # fmt: skip
hydra_values = st.recursive(
    hydra_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hydra_keys, inner, max_size=3),
    max_leaves=8,
)


def as_read(value: Any) -> Any:
    """What verl should receive for a spec value: dates and times as ISO text (Hydra has no date type)."""
    if isinstance(value, dict):
        return {k: as_read(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_read(v) for v in value]
    return value.isoformat() if isinstance(value, dt.date | dt.time) else value


def verl_argv(overrides: dict[str, Any], tmp_path: Path) -> list[str]:
    from benchbed.adapters.verl import VerlAdapter

    spec = build_spec({"name": "v", "adapter": "verl", "verl": {"overrides": overrides}})
    return VerlAdapter().render(spec, tmp_path / "run").argv


@SETTINGS
@given(overrides=st.dictionaries(hydra_keys.map(lambda k: f"custom.{k}"), hydra_values, max_size=4))
def test_verl_overrides_round_trip_through_hydra_and_omegaconf(overrides: dict[str, Any], tmp_path_factory) -> None:
    argv = verl_argv(overrides, tmp_path_factory.mktemp("v"))
    parsed = OverridesParser.create().parse_overrides([a for a in argv if a.startswith("custom.")])
    read = {o.key_or_group: OmegaConf.to_container(OmegaConf.create({"v": o.value()}), resolve=True)["v"]
            for o in parsed}  # fmt: skip
    assert read == as_read(overrides)


@SETTINGS
@given(key=st.text(min_size=1, max_size=12))
def test_a_key_hydra_cannot_parse_is_refused_by_name(key: str, tmp_path_factory) -> None:
    try:
        argv = verl_argv({key: 1}, tmp_path_factory.mktemp("v"))
    except SpecError as exc:
        assert "is not a Hydra override key" in str(exc)
        return
    (override,) = OverridesParser.create().parse_overrides([a for a in argv if a.startswith(f"{key}=")])
    assert override.value() == 1


# ------------------------------------------------------------------------------------------------ slime
SLIME_STRINGS = ("hf_checkpoint", "ref_load", "load", "save", "prompt_data", "custom_generate_function_path")
argv_text = st.text(min_size=1, max_size=12).filter(lambda s: "\x00" not in s)  # no OS argument holds a NUL


def slime_parser(argv: list[str]) -> argparse.ArgumentParser:
    """argparse as slime declares its options: the ones under test as strings, the others as flags or values by
    their shape in the rendered command (a value never starts with '-': benchbed writes `--flag=-value`)."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    declared = {f"--{name.replace('_', '-')}" for name in SLIME_STRINGS}
    for name in declared:
        parser.add_argument(name, type=str)
    for i, token in enumerate(argv):
        name = token.partition("=")[0]
        if not token.startswith("--") or name in declared:
            continue
        declared.add(name)
        takes_value = "=" in token or (i + 1 < len(argv) and not argv[i + 1].startswith("-"))
        parser.add_argument(name, **({"type": str} if takes_value else {"action": "store_true"}))
    return parser


@SETTINGS
@given(values=st.fixed_dictionaries({name: argv_text for name in SLIME_STRINGS}))
def test_slime_arguments_round_trip_through_argparse(values: dict[str, str], tmp_path_factory) -> None:
    from benchbed.adapters.slime.render import train_args

    spec = build_spec({
        "name": "t", "adapter": "slime",
        "workload": {"model": "Qwen/Qwen3-30B-A3B", "prompts_per_step": 32, "group_size": 8, "steps": 5},
        "resources": {"trainer_gpus": 16, "generator_gpus": 8, "colocated": False},
        "slime": {**values, "mode": "sync"},
    })  # fmt: skip
    argv = train_args(spec, spec.adapter_options("slime"), tmp_path_factory.mktemp("s"), "sync")[2:]
    parsed = slime_parser(argv).parse_args(argv)
    assert {name: getattr(parsed, name) for name in SLIME_STRINGS} == values
    assert parsed.rollout_batch_size == "32" and parsed.use_tensorboard is True
