"""The adapter registry over the `benchbed.adapters` entry-point group."""

from __future__ import annotations

import pytest
from benchbed.adapters.example.options import ExampleOptions

from benchbed.adapter import Adapter, available_adapters, get_adapter
from benchbed.errors import AdapterError
from benchbed.sim.config import SimConfig
from benchbed.spec import build_spec


def test_sim_is_registered_and_loads_lazily():
    assert "sim" in available_adapters()
    adapter = get_adapter("sim")
    assert isinstance(adapter, Adapter) and adapter.name == "sim"
    assert get_adapter("sim") is adapter


def test_unknown_adapter_suggests_the_closest_name():
    with pytest.raises(AdapterError, match=r"unknown adapter 'simm'; did you mean 'sim'\?"):
        get_adapter("simm")


def test_unknown_adapter_without_a_close_name_lists_what_exists():
    with pytest.raises(AdapterError, match=r"unknown adapter 'zzzzzz' \(available: .*sim"):
        get_adapter("zzzzzz")


def test_an_entry_point_that_is_not_an_adapter_subclass_is_refused(tmp_path, monkeypatch) -> None:
    """Every adapter has one shape: a duck-typed class with render() and parse() is not registered as one."""
    (tmp_path / "ducks.py").write_text("class Duck:\n    name = 'duck'\n    def render(self, spec, run_dir): ...\n"
                                       "    def parse(self, path): ...\n")  # fmt: skip
    info = tmp_path / "ducks-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ducks\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[benchbed.adapters]\nduck = ducks:Duck\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "duck" in available_adapters()
    with pytest.raises(
        AdapterError, match=r"^entry point 'duck' \(ducks:Duck\) is not a benchbed.adapter.Adapter subclass$"
    ):
        get_adapter("duck")


def test_options_are_validated_once_when_the_spec_is_built() -> None:
    spec = build_spec({"name": "x", "adapter": "sim", "sim": {"concurrency": 8}})
    options = spec.adapter_options()
    assert isinstance(options, SimConfig) and options.concurrency == 8
    assert spec.adapter_options() is options  # the model validated at build time, not a new validation
    assert spec.adapter_options("example").update_s == ExampleOptions().update_s  # an absent table: defaults
    assert get_adapter("sandbox").table == "sandbox_bench" and get_adapter("sim").table == "sim"
