"""Figures of the comparison section: run groups side by side, each figure titled, with labelled axes (units)
and a legend. Title, axis labels and legend carry SVG ids (title-*, xlabel-*, ylabel-*, legend-*) so the
browser test can check every figure has them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter

from benchbed.metrics.series import COMPONENTS
from benchbed.report.plots import COMPONENT_COLORS, _duration, _time_axis, to_svg
from benchbed.report.run_groups import Curve, Interval

WIDTH = 9.5  # inches, as the per-run figures
BAR_ROW = 0.32  # inches per bar row
MAX_LABEL = 44  # characters of a group label on an axis
_ids = itertools.count()


def group_colors(n: int) -> list[str]:
    """One colour per run group, the same in every comparison figure."""
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [matplotlib.colors.to_hex(cmap(i % cmap.N)) for i in range(n)]


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _figure(height: float, left: float = 0.8, legend_rows: int = 1, bottom: float = 0.6) -> Figure:
    """A figure with fixed margins in inches; the top leaves room for the title and `legend_rows` legend rows."""
    top = 0.42 + 0.22 * legend_rows
    height += top
    fig = Figure(figsize=(WIDTH, height), dpi=96)
    fig.subplots_adjust(left=left / WIDTH, right=1 - 0.25 / WIDTH, bottom=bottom / height, top=1 - top / height)
    return fig


def _legend(fig: Figure, handles: list[Any], labels: list[str], columns: int) -> None:
    """The figure's legend in rows under its title, from the left edge (room for long labels)."""
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.1 / WIDTH, 1 - 0.36 / fig.get_figheight()),
               ncols=columns, fontsize=8, frameon=False, handlelength=1.6, columnspacing=1.2)  # fmt: skip


def _finish(fig: Figure, axes: Sequence[matplotlib.axes.Axes], title: str) -> str:
    """Give title, axis labels and legends their ids, then render."""
    n = next(_ids)
    fig.suptitle(title, fontsize=11, x=0.5, y=1 - 0.06 / fig.get_figheight(), va="top").set_gid(f"title-{n}")
    for i, ax in enumerate(axes):
        ax.xaxis.label.set_gid(f"xlabel-{n}-{i}")
        ax.yaxis.label.set_gid(f"ylabel-{n}-{i}")
        if ax.get_legend() is not None:
            ax.get_legend().set_gid(f"legend-{n}-{i}")
    for i, legend in enumerate(fig.legends):
        legend.set_gid(f"legend-{n}-f{i}")
    return to_svg(fig)


def _rows(entries: int, columns: int) -> int:
    return -(-entries // columns)


def _label_margin(labels: Sequence[str]) -> float:
    return min(3.4, 0.35 + 0.068 * max(len(_short(s)) for s in labels))


def _bar_axis(ax: matplotlib.axes.Axes, labels: Sequence[str]) -> None:
    ax.set_yticks(range(len(labels)), [_short(s) for s in labels], fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_ylabel("run group")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)


def breakdown_bars(labels: Sequence[str], seconds: Sequence[dict[str, float] | None], ns: Sequence[int]) -> str:
    """Median seconds per step by trainer component, one stacked horizontal bar per group."""
    present = [c for c in COMPONENTS if any(s and s.get(c) for s in seconds)] or ["other"]
    fig = _figure(0.9 + BAR_ROW * len(labels), left=_label_margin(labels))
    ax = fig.add_subplot()
    left = np.zeros(len(labels))
    for component in present:
        width = np.array([(s or {}).get(component, 0.0) for s in seconds])
        ax.barh(range(len(labels)), width, left=left, height=0.6, color=COMPONENT_COLORS[component], label=component)
        left += width
    for i, (total, n, s) in enumerate(zip(left, ns, seconds, strict=True)):
        text = " n/a: no trainer breakdown" if s is None else f"{total:.3g} s  (n={n})"
        ax.text(total + left.max() * 0.01, i, text, va="center", fontsize=8, color="#666" if s is None else "#222")
    ax.set_xlim(0, max(float(left.max()) * 1.18, 1e-9))
    _bar_axis(ax, labels)
    ax.set_xlabel("median time per trainer step (s)")
    _legend(fig, *ax.get_legend_handles_labels(), columns=len(present))
    return _finish(fig, [ax], "Trainer step breakdown")


def interval_bars(
    title: str, labels: Sequence[str], series: dict[str, Sequence[Interval | None]], xlabel: str,
    percent: bool = False,
) -> str:  # fmt: skip
    """Grouped horizontal bars (one per series) at the median with a line over its interval, each labelled with n
    and the interval's coverage; a single-run group's bar is hatched; 'n/a' if absent."""
    names = list(series)
    fig = _figure(0.9 + BAR_ROW * len(labels) * max(1.0, 0.6 * len(names)), left=_label_margin(labels))
    ax = fig.add_subplot()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    band = 0.8 / len(names)
    top = 0.0
    for j, name in enumerate(names):
        y = np.arange(len(labels)) - 0.4 + band * (j + 0.5)
        intervals = series[name]
        median = np.array([iv.median if iv else 0.0 for iv in intervals])
        bars = ax.barh(y, median, height=band * 0.9, color=palette[j % len(palette)], label=name)
        for bar, iv in zip(bars, intervals, strict=True):
            if iv is not None and iv.n == 1:
                bar.set_hatch("///")
                bar.set_edgecolor("#ffffff")
        for yi, iv in zip(y, intervals, strict=True):
            if iv is None:
                ax.annotate(
                    "n/a", (0, yi), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7, color="#666"
                )
            else:
                if iv.n > 1:
                    ax.plot([iv.low, iv.high], [yi, yi], color="#222", linewidth=1.2)
                note = f"n={iv.n}, {iv.coverage_label()}"
                ax.annotate(note, (iv.high, yi), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7,
                            color="#444")  # fmt: skip
            top = max(top, iv.high if iv else 0.0)
    ax.set_xlim(0, max(top * 1.3, 1.0 if percent else 1e-9))  # room for the n and coverage notes
    if percent:
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
    _bar_axis(ax, labels)
    ax.set_xlabel(xlabel)
    handles, names_ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="#222", linewidth=1.2))
    names_.append("interval of the median (its coverage at each bar)")
    handles.append(Patch(facecolor="#bbbbbb", hatch="///", edgecolor="#ffffff"))
    names_.append("single run (no interval)")
    _legend(fig, handles, names_, columns=len(handles))
    return _finish(fig, [ax], title)


def overlaid_cdfs(title: str, curves: dict[str, np.ndarray], colors: dict[str, str], xlabel: str,
                  seconds: bool = False, discrete: bool = False,
                  runs: dict[str, int] | None = None) -> str:  # fmt: skip
    """Empirical CDFs of each group's pooled values, one step line per group (its legend says over how many runs)."""
    columns = 2 if len(curves) > 1 else 1
    fig = _figure(2.9, left=0.9, legend_rows=_rows(len(curves), columns))
    ax = fig.add_subplot()
    everything = np.concatenate([v for v in curves.values() if len(v)]) if curves else np.zeros(1)
    for label, values in curves.items():
        xs = np.sort(values)
        ys = np.arange(1, len(xs) + 1) / len(xs)
        if discrete:
            xs, first = np.unique(xs, return_index=True)
            ys = np.append(ys[first[1:] - 1], 1.0)
        ax.step(np.append(xs[:1], xs), np.append(0.0, ys), where="post", color=colors[label], linewidth=1.6,
                label=f"{_short(label)} ({_runs(runs, label)}{len(values):,} values)")  # fmt: skip
    if seconds:
        _time_axis(ax, "x", everything)
    if discrete:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("cumulative fraction (0–1)")
    _legend(fig, *ax.get_legend_handles_labels(), columns=columns)
    return _finish(fig, [ax], title)


def _runs(runs: dict[str, int] | None, label: str) -> str:
    """'n=3, ' for a legend entry ('n=1 (single run), ' for one run); '' when not known."""
    if runs is None or label not in runs:
        return ""
    return f"n={runs[label]}{' (single run)' if runs[label] == 1 else ''}, "


def step_time_boxes(labels: Sequence[str], durations: Sequence[np.ndarray], colors: Sequence[str]) -> str:
    """Per-step durations per group as horizontal box plots (box: quartiles, whiskers: 5th–95th percentile)."""
    fig = _figure(0.9 + BAR_ROW * len(labels), left=_label_margin(labels))
    ax = fig.add_subplot()
    data = [d if len(d) else np.array([np.nan]) for d in durations]
    boxes = ax.boxplot(data, orientation="horizontal", positions=range(len(labels)), widths=0.55, whis=(5, 95),
                       showfliers=False, patch_artist=True, medianprops={"color": "#222"})  # fmt: skip
    for patch, color in zip(boxes["boxes"], colors, strict=True):
        patch.set_facecolor(color)
        patch.set_alpha(0.75)
    values = np.concatenate([d for d in durations if len(d)]) if any(len(d) for d in durations) else np.ones(1)
    _time_axis(ax, "x", values)
    _bar_axis(ax, labels)
    ax.set_xlabel("trainer step duration (time; unit on each tick)")
    handles = [
        Patch(facecolor="#bbbbbb", edgecolor="#222", label="quartiles (25th–75th)"),
        Line2D([], [], color="#222", label="median"),
        Line2D([], [], color="#222", marker="|", markersize=8, label="whiskers: 5th–95th percentile"),
    ]
    _legend(fig, handles, [h.get_label() for h in handles], columns=3)
    return _finish(fig, [ax], "Per-step time distribution (steps after warm-up)")


def _fixed_label(fixed: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in fixed.items()) or "all runs (no other matrix field)"


def matrix_panels(axis: str, panels: dict[str, tuple[str, list[Curve]]]) -> str:
    """Metric-versus-parameter curves for one matrix axis: one panel per metric, one line per other-axes value."""
    names = list(panels)
    columns = 2 if len(names) > 1 else 1
    rows = _rows(len(names), columns)
    fixed_labels: dict[str, str] = {}
    for _, curves in panels.values():
        for curve in curves:
            fixed_labels.setdefault(_fixed_label(curve.fixed), group_colors(12)[len(fixed_labels) % 12])
    legend_columns = min(4, len(fixed_labels) + 2)
    fig = _figure(2.75 * rows - 0.35, left=1.0, legend_rows=_rows(len(fixed_labels) + 2, legend_columns) + 1)
    fig.subplots_adjust(hspace=0.6, wspace=0.3)
    axes = [fig.add_subplot(rows, columns, i + 1) for i in range(len(names))]
    for ax, name in zip(axes, names, strict=True):
        unit, curves = panels[name]
        for curve in curves:
            median = np.array([iv.median for iv in curve.y])
            low = median - np.array([iv.low for iv in curve.y])
            high = np.array([iv.high for iv in curve.y]) - median
            ax.errorbar(curve.x, median, yerr=[low, high], marker="o", markersize=4, capsize=3, linewidth=1.5,
                        color=fixed_labels[_fixed_label(curve.fixed)])  # fmt: skip
            single = [k for k, iv in enumerate(curve.y) if iv.n == 1]
            if single:  # a single run: no interval, drawn hollow
                ax.scatter([curve.x[k] for k in single], median[single], s=40, facecolors="white", zorder=3,
                           edgecolors=fixed_labels[_fixed_label(curve.fixed)], linewidths=1.5)  # fmt: skip
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(f"{axis} (matrix value)", fontsize=9)
        ax.set_ylabel(unit, fontsize=9)
        ax.grid(True, alpha=0.3)
        xs = sorted({x for c in curves for x in c.x})
        if len(xs) > 2 and xs[-1] > 8 * max(xs[0], 1e-12):
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [f"{x:g}" for x in xs], fontsize=8)
        ax.minorticks_off()
    handles = [Line2D([], [], color=c, marker="o") for c in fixed_labels.values()]
    handles.append(Line2D([], [], color="#222", marker="|", linestyle="", markersize=8))
    handles.append(Line2D([], [], color="#222", marker="o", markerfacecolor="white", linestyle=""))
    _legend(
        fig,
        handles,
        [*fixed_labels, "bars: interval of the median (range below six runs)", "hollow: single run"],
        columns=legend_columns,
    )
    return _finish(fig, axes, f"Metrics versus {axis.rsplit('.', 1)[-1]} (one line per value of the other matrix axes)")


@dataclass(frozen=True)
class RewardCurve:
    """One run's training reward by step: seconds since its first step began at each step's end, and GPU-hours
    (None without GPU counts)."""

    seconds: np.ndarray
    rewards: np.ndarray
    gpu_hours: np.ndarray | None


def reward_curves(curves: dict[str, list[RewardCurve]], colors: dict[str, str], target: float | None) -> str:
    """Training reward against wall time and, when every run has GPU counts, against GPU-hours: one line per run,
    coloured by its group, the quality target (when all runs share one) dashed."""
    runs = [c for group in curves.values() for c in group]
    by_gpu = all(c.gpu_hours is not None for c in runs)
    columns = 2 if len(curves) > 1 else 1
    fig = _figure(2.9, left=0.9, legend_rows=_rows(len(curves) + (target is not None), columns))
    axes = [fig.add_subplot(1, 2 if by_gpu else 1, i + 1) for i in range(2 if by_gpu else 1)]
    if by_gpu:
        fig.subplots_adjust(wspace=0.28)
    for label, group in curves.items():
        for i, run in enumerate(group):
            shown = f"{_short(label)} ({len(group)} run{'s' if len(group) > 1 else ''})" if i == 0 else None
            axes[0].plot(run.seconds, run.rewards, color=colors[label], linewidth=1.4, marker=".", label=shown)
            if by_gpu:
                axes[1].plot(run.gpu_hours, run.rewards, color=colors[label], linewidth=1.4, marker=".")
    axes[0].xaxis.set_major_locator(MaxNLocator(nbins=6))  # linear: a learning curve's shape is the point
    axes[0].xaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v == 0 else _duration(v)))
    axes[0].set_xlim(left=0)
    axes[0].set_xlabel("wall time since the first step began (time; unit on each tick)")
    if by_gpu:
        axes[1].set_xlim(left=0)
        axes[1].set_xlabel("GPU-hours (trainer + generator GPUs × time)")
    for ax in axes:
        if target is not None:
            ax.axhline(target, color="#555", linestyle="--", linewidth=1.0, label="quality target" if ax is axes[0]
                       else None)  # fmt: skip
        ax.set_ylabel("training reward (mean per step)")
        ax.grid(True, alpha=0.3)
    _legend(fig, *axes[0].get_legend_handles_labels(), columns=columns)
    return _finish(fig, axes, "Training reward against time" + (" and GPU-hours" if by_gpu else ""))
