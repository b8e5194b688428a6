"""Matplotlib figures for reports, rendered without a display (Agg/SVG) into inline SVG text.

Each function takes plot-ready data from benchbed.metrics.series and returns an <svg> element as a string;
large inputs are drawn as areas or lines rather than one rectangle per item, so the SVG stays small.
"""

from __future__ import annotations

import io
import itertools
import re
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, PercentFormatter

from benchbed.metrics.series import COMPONENTS, NO_LEVEL

COMPONENT_COLORS = {
    "wait": "#d62728", "compute": "#2ca02c", "weight_sync": "#1f77b4", "checkpoint": "#9467bd", "other": "#7f7f7f",
}  # fmt: skip
STATUS_COLORS = {
    "ok": "#6fc2b6", "dropped_stale": "#fdb462", "filtered_zero_adv": "#e5d84a", "discarded": "#bc80bd",
    "aborted": "#fb8072", "failed": "#e31a1c",
}  # fmt: skip
TRAINER_KEY_COLORS = {f"trainer.{c}": color for c, color in COMPONENT_COLORS.items()}
PAUSED_COLOR = "#c7c7c7"
MIN_STALENESS_BINS = 4
MAX_BUCKETS = 400  # per-step series longer than this are drawn as means over buckets of consecutive steps
MAX_BARS = 100  # beyond this many buckets, per-step bars become a filled step band
SPECIAL_LANES = ("trainer", "generator.paused")  # drawn first, always labelled
MAX_LANE_LABELS = 16  # label every k-th generator lane beyond this (tick labels dominate drawing time)
PANEL_WIDTH = 4.7  # inches: sandbox panels sit two to a row
QUEUE_COLOR, START_COLOR = "#9467bd", "#1f77b4"
REASON_COLORS = {
    "rate_limited": "#fdb462", "no_capacity": "#fb8072", "start_timeout": "#e31a1c", "image_error": "#bc80bd",
    "oom": "#8c564b", "exec_timeout": "#e377c2", "lifetime_timeout": "#f7b6d2", "lost": "#7f7f7f",
    "auth": "#bcbd22", "internal": "#17becf",
}  # fmt: skip
LOG_SPREAD = 10.0  # time axes go logarithmic when the largest value exceeds the smallest this many times
_salt = itertools.count()


def to_svg(fig: Figure) -> str:
    """The figure as an inline <svg> element (no XML prolog or DOCTYPE), text kept as text."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"benchbed-{next(_salt)}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _figure(height: float = 3.2, left: float = 0.8, width: float = 9.5) -> tuple[Figure, matplotlib.axes.Axes]:
    """A figure with fixed margins in inches (cheaper than tight layout, which draws twice)."""
    fig = Figure(figsize=(width, height), dpi=96)
    fig.subplots_adjust(left=left / width, right=1 - 0.2 / width, bottom=0.55 / height, top=1 - 0.4 / height)
    ax = fig.add_subplot()
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def per_step_buckets(
    frame: pd.DataFrame, columns: list[str], max_buckets: int = MAX_BUCKETS
) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """Bin edges and per-step means of `columns` over buckets of k consecutive steps (k = 1 for short runs).

    Keeps long runs (thousands of steps) cheap to draw and small as SVG; returns (edges, values, k).
    """
    steps = frame["step"].to_numpy()
    k = max(1, -(-len(frame) // max_buckets))
    bucket = np.arange(len(frame)) // k
    means = frame[columns].groupby(bucket).mean()
    first = steps[::k]
    last = np.append(first[1:] - 1, steps[-1])
    edges = np.append(first - 0.5, last[-1] + 0.5).astype(float)
    return edges, {c: means[c].to_numpy() for c in columns}, k


def _bands(ax: matplotlib.axes.Axes, edges: np.ndarray, low: np.ndarray, high: np.ndarray, **style: Any) -> None:
    """Bars from `low` to `high` over bins `edges` as one collection; a filled step band when bars get too thin."""
    if len(edges) - 1 > MAX_BARS:
        ax.fill_between(edges, np.append(low, low[-1]), np.append(high, high[-1]), step="post", linewidth=0, **style)
        return
    gap = 0.1 * np.diff(edges)
    x0, x1 = edges[:-1] + gap, edges[1:] - gap
    verts = np.stack([np.column_stack(p) for p in ((x0, low), (x0, high), (x1, high), (x1, low))], axis=1)
    ax.add_collection(PolyCollection(verts, linewidths=0, **style))


def _step_label(k: int) -> str:
    return "trainer step" if k == 1 else f"trainer step (mean per step over buckets of {k} steps)"


def step_breakdown(frame: pd.DataFrame) -> str:
    """Seconds per step stacked by trainer component: bars, or filled bands for long runs."""
    fig, ax = _figure()
    present = [c for c in COMPONENTS if frame[c].abs().sum() > 0] or ["other"]
    edges, values, k = per_step_buckets(frame, present)
    bottom = np.zeros(len(edges) - 1)
    for name in present:
        top = bottom + values[name]
        _bands(ax, edges, bottom, top, color=COMPONENT_COLORS[name], label=name)
        bottom = top
    ax.set_xlim(edges[0], edges[-1])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(float(bottom.max()) * 1.05, 1e-9))
    ax.set_xlabel(_step_label(k))
    ax.set_ylabel("seconds")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=len(present), fontsize=8, frameon=False)
    return to_svg(fig)


def staleness_histogram(values: np.ndarray) -> str:
    """Trained samples per staleness value (versions)."""
    fig, ax = _figure(2.8)
    counts = np.bincount(values)
    ax.bar(np.arange(len(counts)), counts, color="#1f77b4", width=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(-0.6, max(len(counts), MIN_STALENESS_BINS) - 0.4)  # a lone bar must not fill the axis
    ax.set_xlabel("staleness v_train − v_start (versions)")
    ax.set_ylabel("trained samples")
    return to_svg(fig)


def utilisation(frame: pd.DataFrame, concurrency: int | None) -> str:
    """Running rollouts over time as a fraction of the generator's slots (or as a count if unknown)."""
    fig, ax = _figure(2.8)
    edges = np.append(frame["t0"].to_numpy(), frame["t1"].to_numpy()[-1:])
    column = "utilisation" if concurrency else "running"
    values = frame[column].to_numpy()
    ax.fill_between(edges, 0, np.append(values, values[-1]), step="post", linewidth=0, color="#1f77b4", alpha=0.6)
    ax.set_xlim(edges[0], edges[-1])
    if concurrency:
        ax.set_ylim(0, max(1.05, float(values.max()) * 1.05))
        ax.set_ylabel(f"running / {concurrency} slots")
    else:
        ax.set_ylabel("running rollouts")
    ax.set_xlabel("time since run start (s)")
    return to_svg(fig)


def zero_adv(frame: pd.DataFrame) -> str:
    """Finished groups per step, with the zero-advantage ones highlighted."""
    fig, ax = _figure(2.8)
    edges, values, k = per_step_buckets(frame, ["groups", "zero_adv"])
    zeros = np.zeros(len(edges) - 1)
    _bands(ax, edges, zeros, values["groups"], color="#c7c7c7", label="finished groups")
    _bands(ax, edges, zeros, values["zero_adv"], color="#d62728", label="zero-advantage groups")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(0, max(float(values["groups"].max()) * 1.05, 1.0))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(_step_label(k))
    ax.set_ylabel("groups")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, fontsize=8, frameon=False)
    return to_svg(fig)


def _lane_order(lanes: list[str]) -> list[str]:
    def key(name: str) -> tuple[int, str, int]:
        match = re.match(r"^(.*?)(\d+)$", name)
        special = SPECIAL_LANES.index(name) if name in SPECIAL_LANES else len(SPECIAL_LANES)
        return (special, match.group(1), int(match.group(2))) if match else (special, name, -1)

    return sorted(lanes, key=key)


def timeline(rows: pd.DataFrame) -> str:
    """Lane chart: trainer components, generator pauses, then one lane per generator slot."""
    lanes = _lane_order(list(rows["lane"].unique()))
    position = {lane: i for i, lane in enumerate(lanes)}
    fig, ax = _figure(max(2.5, 1.0 + 0.13 * len(lanes)), left=1.1)
    y = rows["lane"].map(position).to_numpy()
    colors = [
        TRAINER_KEY_COLORS.get(k) or (PAUSED_COLOR if k == "generator.paused" else STATUS_COLORS.get(s, "#17becf"))
        for k, s in zip(rows["key"], rows["status"], strict=True)
    ]
    t0, t1 = rows["t0"].to_numpy(), rows["t1"].to_numpy()
    verts = np.stack([np.column_stack([t0, y - 0.4]), np.column_stack([t0, y + 0.4]),
                      np.column_stack([t1, y + 0.4]), np.column_stack([t1, y - 0.4])], axis=1)  # fmt: skip
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.3))
    ax.set_xlim(float(t0.min()), float(t1.max()))
    fixed = [i for i, lane in enumerate(lanes) if lane in SPECIAL_LANES]
    generator = [i for i, lane in enumerate(lanes) if lane not in SPECIAL_LANES]
    shown = fixed + generator[:: max(1, len(generator) // MAX_LANE_LABELS)]
    ax.set_yticks(shown, [lanes[i] for i in shown], fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("time since run start (s)")
    ax.grid(True, axis="x", alpha=0.3)
    visible = rows[rows["t1"] > rows["t0"]]  # zero-length spans (e.g. no weight sync) get no legend entry
    legend = {k.removeprefix("trainer."): c for k, c in TRAINER_KEY_COLORS.items() if (visible["key"] == k).any()}
    if (visible["key"] == "generator.paused").any():
        legend["generator paused"] = PAUSED_COLOR
    rollout_status = visible.loc[visible["key"] == "rollout", "status"].unique()
    legend.update({f"rollout {s}": STATUS_COLORS.get(s, "#17becf") for s in rollout_status})
    handles = [Patch(color=c, label=name) for name, c in legend.items()]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=8, fontsize=8, frameon=False)
    return to_svg(fig)


def _panel_figure() -> tuple[Figure, matplotlib.axes.Axes]:
    """A half-width figure for a sandbox panel, with room on the left for tick labels with units."""
    return _figure(3.0, left=0.95, width=PANEL_WIDTH)


def level_label(level: int) -> str:
    """How a sandbox concurrency level is named on axes and legends."""
    return "all starts" if level == NO_LEVEL else str(level)


def _duration(seconds: float) -> str:
    """A duration with a unit that keeps the number short (µs, ms, s, min)."""
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1.0, 1e3, "ms"), (120.0, 1.0, "s")):
        if abs(seconds) < limit:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds / 60:.3g} min"


def _time_axis(ax: matplotlib.axes.Axes, which: str, values: np.ndarray) -> None:
    """Seconds on the x or y axis, every label a duration with its unit; logarithmic when the values span over
    LOG_SPREAD times (labels at 1-2-5, 1-3 or 1 per decade so they never touch; minor ticks unlabelled)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    positive = values[np.isfinite(values) & (values > 0)]
    if len(positive) and positive.max() > LOG_SPREAD * positive.min():
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        decades = float(np.log10(positive.max() / positive.min()))
        subs = (1.0, 2.0, 5.0) if decades <= 1.2 else (1.0, 3.0) if decades <= 2.5 else (1.0,)  # labels must not touch
        axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_minor_formatter(NullFormatter())  # minor ticks unlabelled: no '6×10⁰' beside '5 s'
    else:
        axis.set_major_locator(MaxNLocator(nbins=6))
    axis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v == 0 else _duration(v)))


def _level_colors(levels: list[int]) -> dict[int, Any]:
    """One colour per level, darker for higher concurrency, the same in every sandbox panel."""
    cmap = matplotlib.colormaps["viridis"]
    spots = np.linspace(0.85, 0.1, len(levels)) if len(levels) > 1 else [0.35]
    return {level: cmap(float(x)) for level, x in zip(sorted(levels), spots, strict=True)}


def _level_bars_axis(ax: matplotlib.axes.Axes, levels: list[int]) -> None:
    ax.set_xticks(range(len(levels)), [level_label(lv) for lv in levels])
    ax.set_xlim(-0.6, len(levels) - 0.4)
    if levels != [NO_LEVEL]:
        ax.set_xlabel("concurrency level")


def sandbox_start_cdf(frame: pd.DataFrame) -> str:
    """Fraction of a level's successful starts ready within a latency, one step line per level."""
    fig, ax = _panel_figure()
    levels = sorted(frame["level"].unique().tolist())
    colors = _level_colors(levels)
    for level in levels:
        rows = frame[frame["level"] == level]
        x = np.append(rows["start_s"].to_numpy()[:1], rows["start_s"].to_numpy())
        y = np.append(0.0, rows["fraction"].to_numpy())
        ax.plot(x, y, drawstyle="steps-post", color=colors[level], linewidth=1.6, label=level_label(level))
    _time_axis(ax, "x", frame["start_s"].to_numpy())
    ax.set_ylim(0, 1.02)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_xlabel("start latency (create → ready)")
    ax.set_ylabel("fraction of starts")
    if levels != [NO_LEVEL]:
        ax.legend(title="level", loc="lower right", fontsize=8, title_fontsize=8, frameon=False)
    return to_svg(fig)


def sandbox_failures(levels: pd.DataFrame, reasons: pd.DataFrame) -> str:
    """Init-failure rate per level stacked by reason, each bar labelled failures/attempts."""
    fig, ax = _panel_figure()
    order = levels["level"].tolist()
    x = np.arange(len(order))
    bottom = np.zeros(len(order))
    for reason in dict.fromkeys(reasons["reason"]):
        rows = reasons[reasons["reason"] == reason].set_index("level")["rate"]
        height = rows.reindex(order).fillna(0.0).to_numpy()
        ax.bar(x, height, bottom=bottom, width=0.6, color=REASON_COLORS.get(reason, "#999999"), label=reason)
        bottom += height
    top = max(float(bottom.max()) * 1.25, 0.05)
    for xi, failures, attempts, b in zip(x, levels["failures"], levels["attempts"], bottom, strict=True):
        ax.text(xi, b + top * 0.02, f"{failures}/{attempts}", ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, top)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
    _level_bars_axis(ax, order)
    ax.set_ylabel("init failure rate")
    if len(reasons):
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3, fontsize=8, frameon=False)
    return to_svg(fig)


def sandbox_throughput(levels: pd.DataFrame) -> str:
    """Successful starts per second at each level."""
    fig, ax = _panel_figure()
    order = levels["level"].tolist()
    colors = _level_colors(order)
    rate = levels["starts_per_s"].to_numpy(dtype=float)
    x = np.arange(len(order))
    ax.bar(x, np.nan_to_num(rate), width=0.6, color=[colors[lv] for lv in order])
    top = max(float(np.nanmax(rate)) if np.isfinite(rate).any() else 0.0, 1e-9) * 1.18
    for xi, value in zip(x, rate, strict=True):
        known = bool(np.isfinite(value))
        ax.text(xi, (value if known else 0.0) + top * 0.01, f"{value:.3g}" if known else "—", ha="center",
                va="bottom", fontsize=8)  # fmt: skip
    ax.set_ylim(0, top)
    _level_bars_axis(ax, order)
    ax.set_ylabel("starts / s")
    return to_svg(fig)


def sandbox_wait_vs_start(levels: pd.DataFrame) -> str:
    """Queue wait beside start latency per level: a dot at the median, a line up to the 99th percentile."""
    fig, ax = _panel_figure()
    order = levels["level"].tolist()
    x = np.arange(len(order))
    for offset, name, color in ((-0.13, "queue", QUEUE_COLOR), (0.13, "start", START_COLOR)):
        p50 = levels[f"{name}_p50_s"].to_numpy(dtype=float)
        p99 = levels[f"{name}_p99_s"].to_numpy(dtype=float)
        ax.vlines(x + offset, p50, p99, color=color, linewidth=2.0)
        ax.plot(x + offset, p50, "o", color=color, markersize=6, label=f"{name} p50")
        ax.plot(x + offset, p99, "_", color=color, markersize=12, markeredgewidth=2.0, label=f"{name} p99")
    values = levels[["queue_p50_s", "queue_p99_s", "start_p50_s", "start_p99_s"]].to_numpy(dtype=float).ravel()
    _time_axis(ax, "y", values)
    _level_bars_axis(ax, order)
    ax.set_ylabel("duration")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=4, fontsize=8, frameon=False, handletextpad=0.3,
              columnspacing=0.9)  # fmt: skip
    return to_svg(fig)
