"""The kit's one preset format: every adapter's preset file loads through `load_presets`, models pick the presets
they picked before the format was shared, a malformed file is one line naming where, and the launch plans of the
preset-using adapters are the ones rendered before (preset_renders.json: sha256 of each plan, run directory and
checkout written as <run> and <checkout>)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchbed.adapter import get_adapter
from benchbed.adapterkit.presets import choose_preset, load_presets, preset_for_model
from benchbed.errors import AdapterError, BenchbedError, SpecError
from benchbed.spec import build_spec

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("preset_renders.json")
PRESET_FILES = sorted((ROOT / "adapters").glob("*/presets.toml"))
MODELS = (
    "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base", "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Qwen/Qwen3-30B-A3B-Thinking-2507", "Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "Qwen/Qwen3-235B-A22B-Thinking-2507", "Qwen/Qwen3-235B-A22B-Thinking-2507-FP8", "zai-org/GLM-4.5-Air",
    "zai-org/GLM-4.5-Air-Base", "zai-org/GLM-4.5", "zai-org/GLM-4.6", "zai-org/GLM-4.7-355B", "zai-org/GLM-5",
    "zai-org/GLM-5-FP8", "zai-org/GLM-5-744B-A40B", "zai-org/GLM-5.1-Air", "Qwen/Qwen3-0.6B",
    "Qwen/Qwen2.5-7B-Instruct", "qwen3-30b-a3b", "meta-llama/Llama-3-8B", "Qwen/Qwen3-30B-A3B-Extra",
)  # fmt: skip
ADAPTERS = ("verl", "prime_rl", "slime")


def test_every_preset_file_loads_through_the_kit() -> None:
    names = {path.parent.name: list(load_presets(path)) for path in PRESET_FILES}
    assert names == {
        "prime_rl": ["qwen3-30b-a3b", "qwen3-235b-a22b", "glm-4.5-air", "glm-5"],
        "slime": ["qwen3-30B-A3B", "qwen3-235B-A22B", "glm4_5-355B-A32B", "glm5-744B-A40B"],
        "verl": ["qwen3-30b-a3b", "qwen3-235b-a22b", "glm-4.5-air"],
    }
    for path in PRESET_FILES:
        for preset in load_presets(path).values():
            assert preset.source and preset.match
            assert not {"source", "match"} & set(preset.values)


@pytest.mark.parametrize(
    ("adapter", "model", "expected"),
    [
        ("verl", "Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3-30b-a3b"),
        ("verl", "Qwen/Qwen3-30B-A3B-Extra", None),  # verl's presets name whole ids
        ("verl", "zai-org/GLM-4.6", "glm-4.5-air"),
        ("slime", "zai-org/GLM-4.5-Air", "glm4_5-355B-A32B"),  # slime's name parts of the id
        ("slime", "zai-org/GLM-4x5", None),  # a dot in an expression is a dot
        ("prime_rl", "zai-org/GLM-5-FP8", "glm-5"),
        ("prime_rl", "zai-org/GLM-5.1-Air", None),
    ],
)
def test_models_pick_their_preset(adapter: str, model: str, expected: str | None) -> None:
    found = preset_for_model(load_presets(ROOT / "adapters" / adapter / "presets.toml"), model)
    assert (found.name if found else None) == expected


def test_a_named_preset_wins_and_none_turns_it_off() -> None:
    presets = load_presets(ROOT / "adapters" / "verl" / "presets.toml")
    assert choose_preset(presets, "Qwen/Qwen3-30B-A3B", "glm-4.5-air", "verl").name == "glm-4.5-air"
    assert choose_preset(presets, "Qwen/Qwen3-30B-A3B", "none", "verl") is None
    with pytest.raises(SpecError, match=r"\[verl\] preset 'nope' is unknown; presets: glm-4.5-air, qwen3-235b"):
        choose_preset(presets, "Qwen/Qwen3-30B-A3B", "nope", "verl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[a]\nsource = "s"\nmatch = ["x"]\n\n[b]\nmatch = ["y"]\n', r"presets.toml:5: preset 'b' needs source ="),
        ('[a]\nsource = "s"\nmatch = []\n', r"presets.toml:1: preset 'a' needs match = \["),
        ('[a]\nsource = "s"\nmatch = ["(x"]\n', r"presets.toml:1: preset 'a': match '\(x' is not a regular expression"),
        ("a = 1\n", r"presets.toml:0: 'a' should be a preset table"),
        ("[a\n", r"presets.toml: not valid TOML \(.*line 1"),
    ],
)
def test_a_malformed_preset_file_is_one_line_naming_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "presets.toml"
    path.write_text(text)
    with pytest.raises(AdapterError, match=message) as caught:
        load_presets(path)
    assert "\n" not in str(caught.value)


def _plans(run_dir: Path, checkout: Path) -> dict[str, str]:
    """sha256 of each preset-using adapter's launch plan (or its refusal) for every model and preset name."""
    cases = {
        f"{adapter}/{model}/{gpus}": (adapter, model, gpus, None)
        for adapter in ADAPTERS for model in MODELS for gpus in (64, 128)
    }  # fmt: skip
    cases |= {
        f"{a}/preset={p}": (a, "Qwen/Qwen3-0.6B", 64, p) for a in ("verl", "prime_rl") for p in ("glm-4.5-air", "none")
    }
    out = {}
    for key, (adapter, model, gpus, preset) in cases.items():
        data = {
            "name": "t", "adapter": adapter,
            "workload": {"model": model, "max_staleness": 1 if adapter == "prime_rl" else 0},
            "resources": {"trainer_gpus": gpus, "generator_gpus": gpus},
            **({adapter: {"preset": preset}} if preset else {}),
        }  # fmt: skip
        try:
            text = get_adapter(adapter).render(build_spec(data), run_dir).model_dump_json(indent=1)
        except BenchbedError as exc:
            text = f"ERROR {type(exc).__name__}: {exc}"
        text = text.replace(str(run_dir), "<run>").replace(str(checkout), "<checkout>")
        out[key] = hashlib.sha256(text.encode()).hexdigest()
    return out


def test_launch_plans_are_the_ones_rendered_before_the_shared_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "prime-rl"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text('[project]\nname = "prime-rl"\nversion = "0.8.0"\n')
    monkeypatch.setenv("PRIME_RL_DIR", str(checkout))
    plans = _plans(tmp_path / "run", checkout)
    golden = json.loads(GOLDEN.read_text())
    assert sorted(plans) == sorted(golden)
    assert [key for key in plans if plans[key] != golden[key]] == []
