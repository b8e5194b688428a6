"""Plot helpers: bucketing of long per-step series, and SVG output fit for inlining."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchbed.report import plots


def test_per_step_buckets_means_over_consecutive_steps() -> None:
    frame = pd.DataFrame({"step": np.arange(1, 11), "wait": np.arange(1.0, 11.0)})
    edges, values, k = plots.per_step_buckets(frame, ["wait"], max_buckets=4)
    assert k == 3
    np.testing.assert_allclose(edges, [0.5, 3.5, 6.5, 9.5, 10.5])
    np.testing.assert_allclose(values["wait"], [2.0, 5.0, 8.0, 10.0])


def test_per_step_buckets_keeps_short_series_per_step() -> None:
    frame = pd.DataFrame({"step": [2, 3, 5], "groups": [4, 6, 8]})
    edges, values, k = plots.per_step_buckets(frame, ["groups"], max_buckets=400)
    assert k == 1
    np.testing.assert_allclose(edges, [1.5, 2.5, 4.5, 5.5])  # a missing step widens its neighbour's bin
    np.testing.assert_allclose(values["groups"], [4, 6, 8])


def test_svg_is_an_inline_element_without_prolog() -> None:
    svg = plots.staleness_histogram(np.array([0, 1, 1, 2]))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
