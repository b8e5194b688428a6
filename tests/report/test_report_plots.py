"""Plot helpers: bucketing of long per-step series, and SVG output fit for inlining."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

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


@pytest.mark.parametrize("span", [(4.5, 61.0), (0.04, 35.0), (2.0, 900.0)])
def test_log_time_axes_label_every_tick_as_a_duration_and_nothing_else(span) -> None:
    """The step-time chart's log axis labels every major tick as a duration with its unit (never '6×10⁰') and
    leaves minor ticks unlabelled, so no two labels overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from benchbed.report.plots import _time_axis

    fig = Figure(figsize=(9.5, 2))
    ax = fig.add_subplot()
    values = np.geomspace(*span, 20)
    ax.plot(values, np.zeros(20))
    _time_axis(ax, "x", values)
    FigureCanvasAgg(fig).draw()
    assert ax.get_xscale() == "log"
    low, high = ax.get_xlim()
    majors = [t for t in ax.xaxis.get_major_ticks() if low <= t.get_loc() <= high]
    labels = [t.label1.get_text() for t in majors]
    assert len(labels) >= 3 and all(re.fullmatch(r"[\d.]+ (µs|ms|s|min)", label) for label in labels), labels
    assert [t.label1.get_text() for t in ax.xaxis.get_minor_ticks()] == [""] * len(ax.xaxis.get_minor_ticks())
    boxes = [t.label1.get_window_extent() for t in majors]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False))  # no two labels overlap
