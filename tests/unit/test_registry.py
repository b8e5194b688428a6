"""The adapter registry over the `benchbed.adapters` entry-point group."""

from __future__ import annotations

import pytest

from benchbed.adapter import Adapter, available_adapters, get_adapter
from benchbed.errors import AdapterError


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
