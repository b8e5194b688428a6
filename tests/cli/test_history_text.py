"""The history command's plain-text table and the nightly statistics' median (np.median's value, without numpy.ma)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchbed.cli.history import aligned_text
from benchbed.nightly.stats import median


def test_median_equals_numpy_on_odd_even_tied_and_nan_values():
    rng = np.random.default_rng(3)
    for trial in range(300):
        values = rng.integers(0, 5, size=rng.integers(1, 40)).astype(float) / 7  # ties, repeated values
        if trial % 10 == 0:
            values[rng.integers(0, len(values))] = np.nan
        expected = float(np.median(values))
        assert median(values) == expected or (math.isnan(expected) and math.isnan(median(values)))
    assert median([2.0, 1.0]) == 1.5 and median([0.1, 0.2, 0.3, 0.7]) == (0.2 + 0.3) / 2
    assert math.isnan(median([]))


def test_aligned_text_pads_each_column_to_its_widest_cell():
    text = aligned_text(("machine", "nights", "verdict"), [("box", "334", "unchanged"), ("a-long-box", "2", "")])
    assert text.splitlines() == [
        "machine     nights  verdict",
        "box         334     unchanged",
        "a-long-box  2",
    ]


def test_aligned_text_refuses_a_row_of_the_wrong_width():
    with pytest.raises(ValueError):
        aligned_text(("a", "b"), [("1",)])


def test_gate_settings_read_what_gate_writes_with_the_same_defaults():
    from benchbed.gate import GateSettings
    from benchbed.record import Gate

    assert GateSettings() == GateSettings(**Gate().model_dump())
    recorded = Gate(nights=7, alpha=0.01, min_effect=0.1).model_dump_json()
    assert GateSettings.from_json(recorded) == GateSettings(nights=7, alpha=0.01, min_effect=0.1)
    with pytest.raises(TypeError):
        GateSettings.from_json('{"nights": 3, "window": 2}')


def test_history_json_bytes_are_the_standard_librarys_document() -> None:
    """`history --json` writes orjson's bytes: the same text as json.dumps(indent=2), non-ASCII escaped as it does."""
    from benchbed.cli.history import _json_bytes

    document = {"series": [{"entry": "é→ü", "nights": [{"median": 1.5, "values": [1.5, 2]}]}], "untrusted": {}}
    assert _json_bytes(document) == json.dumps(document, indent=2).encode()
    assert _json_bytes({"x": "plain"}) == b'{\n  "x": "plain"\n}'
