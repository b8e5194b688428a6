"""The comparison section at the top of a multi-run report: groups, what differs, aggregated metrics and the
side-by-side figures. Figures that no group can supply are left out with a sentence saying why."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchbed import keys as K
from benchbed.metrics import METRICS, MetricContext, quality, series
from benchbed.metrics.cost import gpu_counts
from benchbed.metrics.registry import display_order, headline_metrics
from benchbed.quality import Target
from benchbed.record import RunRecord
from benchbed.report import compare_plots
from benchbed.report.framework_figures import FrameworkFigures, framework_figures
from benchbed.report.matched import matched_quality, shared_target
from benchbed.report.run_groups import (
    GPU_DENOMINATOR,
    PER_GPU_METRICS,
    PER_GPU_SUFFIX,
    Interval,
    RunGroup,
    aggregate,
    gpu_count,
    group_runs,
    matrix_axes,
    matrix_curves,
    metric_values,
    per_gpu_unit,
    what_differs,
)  # fmt: skip
from benchbed.report.sections import COUNT_ADMISSION_NOTE, Panel, count_admission
from benchbed.report.tables import TextTable
from benchbed.trace import Trace

BREAKDOWN_RATIOS = {
    "wait": "trainer_idle_ratio", "compute": "trainer_compute_ratio", "weight_sync": "trainer_weight_sync_ratio",
    "checkpoint": "trainer_checkpoint_ratio", "other": "trainer_other_ratio",
}  # fmt: skip

MAX_CURVE_PANELS = 4
MARKDOWN_DIFFERS = 8  # fields of 'what differs' in the terminal summary


@dataclass(frozen=True)
class Figure(Panel):
    """A comparison figure: a panel (inline SVG and caption, or why it is missing) under its section's `key`."""

    key: str = field(kw_only=True)


@dataclass(frozen=True)
class ComparisonSection:
    """Everything the template shows above the per-run sections of a multi-run report."""

    groups: TextTable
    differs: TextTable
    metrics: TextTable
    figures: tuple[Figure, ...]
    denominator: str
    verdicts: TextTable | None = None
    verdicts_note: str = ""
    framework_figures: FrameworkFigures | None = None


def _headline(directed: bool = False) -> tuple[str, ...]:
    """The registry's headline metrics, each per-GPU figure right after the metric it is derived from."""
    out: list[str] = []
    for name in headline_metrics(directed):
        out += [name, name.removesuffix("_sps") + PER_GPU_SUFFIX] if name in PER_GPU_METRICS else [name]
    return tuple(out)


def _verdict_cell(comparison: Any) -> str:
    if comparison.verdict == "insufficient_data":
        return f"too few runs (n={comparison.n_baseline} vs {comparison.n_candidate})"
    change = "" if comparison.relative_change is None else f" {comparison.relative_change:+.1%}"
    p = "" if comparison.p_value is None else f", p={comparison.p_value:.2g}"
    return f"{comparison.verdict}{change}{p}"


def verdict_table(groups: Sequence[RunGroup]) -> tuple[TextTable, str] | tuple[None, str]:
    """Each group against the first: the regression gate's verdict (exact rank test) per headline metric."""
    if len(groups) < 2:
        return None, ""
    from benchbed.nightly.stats import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, compare_values, metric_direction

    values = [[metric_values(r) for r in g.records] for g in groups]
    rows = []
    for name in _headline(directed=True):
        direction = metric_direction(name.replace(PER_GPU_SUFFIX, "_sps"))
        base = [v[name] for v in values[0] if name in v]
        if direction is None or not base or not any(name in v for runs in values[1:] for v in runs):
            continue
        cells = []
        for runs in values[1:]:
            candidate = [v[name] for v in runs if name in v]
            cells.append(_verdict_cell(compare_values(base, candidate, direction)) if candidate else "—")
        rows.append((name, *cells))
    note = (f"Two-sided rank test (exact permutation p-value with average ranks for ties) of each group's runs "
            f"against those of {groups[0].label}, as in `benchbed compare`: a regression or improvement needs "
            f"p < {DEFAULT_ALPHA:g} and a median change of at least {DEFAULT_MIN_EFFECT:.0%}; 'too few runs' where "
            "the two sample sizes cannot reach that p at all.")  # fmt: skip
    header = ("metric", *(f"{g.label} vs {groups[0].label}" for g in groups[1:]))
    return TextTable(header, tuple(rows)), note


def _interval_cell(iv: Interval | None) -> str:
    return "—" if iv is None else iv.text()


def _group_table(groups: Sequence[RunGroup], traces: dict[str, Trace]) -> TextTable:
    rows = []
    for g in groups:
        first = g.records[0]
        version = " / ".join(dict.fromkeys(r.adapter.version or traces[r.run_id].meta.framework_version or "—"
                                           for r in g.records))  # fmt: skip
        rows.append((g.label, g.adapter, version, first.adapter.mode or traces[first.run_id].meta.mode or "—",
                     str(g.n), ", ".join(r.run_id for r in g.records), str(gpu_count(first) or "—")))  # fmt: skip
    header = ("group", "adapter", "framework version", "mode", "n", "runs", "GPUs")
    return TextTable(header, tuple(rows))


def _metric_order(name: str) -> tuple[int, int, str]:
    """Display order from the registry; a per-GPU figure sorts right after the metric it is derived from."""
    base = name.removesuffix(PER_GPU_SUFFIX)
    source = base if base in METRICS or not name.endswith(PER_GPU_SUFFIX) else base + "_sps"
    family, position, _ = display_order(source)
    return family, position * 2 + (1 if name.endswith(PER_GPU_SUFFIX) else 0), name


def _unit(name: str, records: Sequence[RunRecord]) -> str:
    if name.endswith(PER_GPU_SUFFIX):
        return per_gpu_unit(name, records)
    return next((r.metrics[name].unit for r in records if name in r.metrics), "")


def _metrics_table(groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]]) -> TextTable:
    records = [r for g in groups for r in g.records]
    names = sorted((n for n in aggregated if not n.startswith("framework_")), key=_metric_order)
    rows = tuple((name, _unit(name, records), *(_interval_cell(iv) for iv in aggregated[name])) for name in names)
    return TextTable(("metric", "unit", *(g.label for g in groups)), rows)


def _breakdown(groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]]) -> Figure:
    title = "Trainer step breakdown"
    step = aggregated.get("step_time_mean_s", [None] * len(groups))
    seconds: list[dict[str, float] | None] = []
    for i in range(len(groups)):
        parts = {c: aggregated[m][i] for c, m in BREAKDOWN_RATIOS.items() if m in aggregated}
        if step[i] is None or not any(parts.values()):
            seconds.append(None)
            continue
        seconds.append({c: iv.median * step[i].median for c, iv in parts.items() if iv is not None})
    if not any(seconds):
        return Figure(title, unavailable="No run has trainer component ratios and a step time.", key="breakdown")
    svg = compare_plots.breakdown_bars([g.label for g in groups], seconds, [g.n for g in groups])
    caption = ("Median step time split by the median trainer ratios (wait = trainer_idle_ratio); components a "
               "framework does not log are absent, the rest of the step is 'other'.")  # fmt: skip
    return Figure(title, svg, caption, key="breakdown")


def _bars(key: str, title: str, groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]],
          names: dict[str, str], xlabel: str, caption: str, percent: bool = True) -> Figure:  # fmt: skip
    series_ = {label: aggregated[name] for name, label in names.items() if name in aggregated}
    if not any(iv for values in series_.values() for iv in values):
        return Figure(title, unavailable=f"No run has {', '.join(names)}.", key=key)
    svg = compare_plots.interval_bars(title, [g.label for g in groups], series_, xlabel, percent=percent)
    return Figure(title, svg, caption, key=key)


GPU_BUSY = {
    "trainer_compute_ratio": "trainer computing, by its timers",
    "trainer_gpu_busy_ratio": "trainer GPUs running kernels (NVML)",
    "generator_utilization": "generator slots busy, by its rollouts",
    "generator_gpu_busy_ratio": "generator GPUs running kernels (NVML)",
}


def _gpu_busy(groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]]) -> Figure:
    """GPU busy (NVML samples) beside what the timers call busy, for the runs that sampled their GPUs."""
    title = "GPU busy beside the timers"
    if not any(aggregated.get(name) and any(aggregated[name]) for name in ("trainer_gpu_busy_ratio",
                                                                          "generator_gpu_busy_ratio")):  # fmt: skip
        return Figure(
            title,
            unavailable="No run has GPU samples with GPU roles (NVML during a local launch, "
            "or W&B or MLflow system metrics with --trainer-gpus/--generator-gpus or a [resources] table).",
            key="gpu",
        )
    caption = ("Timer bars: the trainer's compute share of the window and the generator's slot utilisation. NVML "
               "bars: the mean utilisation of the role's GPUs over the window's steps; a gap between the two is "
               "time the timers count as work while no kernel ran (or work the timers do not see).")  # fmt: skip
    return _bars("gpu", title, groups, aggregated, GPU_BUSY, "fraction of the window (%)", caption)


def _pooled(groups: Sequence[RunGroup], traces: dict[str, Trace],
            values: Callable[[RunRecord, Trace], np.ndarray]) -> dict[str, np.ndarray]:  # fmt: skip
    """Each group's values pooled over its repeats; groups without any are left out."""
    out = {}
    for g in groups:
        parts = [values(r, traces[r.run_id]) for r in g.records]
        pooled = np.concatenate(parts) if parts else np.empty(0)
        if len(pooled):
            out[g.label] = pooled
    return out


def _warmup(record: RunRecord) -> int:
    return int(record.spec.get("warmup_steps", 1))


def _staleness(groups: Sequence[RunGroup], traces: dict[str, Trace], colors: dict[str, str]) -> Figure:
    title = "Staleness of trained samples"
    curves = _pooled(groups, traces, lambda r, t: series.staleness_values(t, _warmup(r)).astype(float))
    if not curves:
        return Figure(title, unavailable="No run has trained rollouts with known versions.", key="staleness")
    svg = compare_plots.overlaid_cdfs(title + " (CDF)", curves, colors, "staleness v_train − v_start (versions)",
                                      runs={g.label: g.n for g in groups},
                                      discrete=True)  # fmt: skip
    caption = "Trained samples after warm-up, pooled over each group's repeats."
    if any(count_admission(r, traces[r.run_id]) for g in groups for r in g.records):
        caption += " " + COUNT_ADMISSION_NOTE
    return Figure(title, svg, caption, key="staleness")


def _sandbox_starts(record: RunRecord, trace: Trace) -> np.ndarray:
    starts = series.sandbox_starts(trace)
    ok = starts[(starts["status"] == "ok") & starts["start_s"].notna()]
    return ok["start_s"].to_numpy(dtype=float)


def _sandboxes(groups: Sequence[RunGroup], traces: dict[str, Trace], colors: dict[str, str]) -> Figure:
    title = "Sandbox start latency"
    has = {g.label for g in groups for r in g.records if (traces[r.run_id].events["key"] == "sandbox.start").any()}
    curves = _pooled([g for g in groups if g.label in has], traces, _sandbox_starts)
    if not curves:
        return Figure(title, unavailable="No run has successful sandbox.start spans.", key="sandboxes")
    xlabel = "start latency, create → ready (time; unit on each tick)"
    svg = compare_plots.overlaid_cdfs(
        title + " (CDF)", curves, colors, xlabel, seconds=True, runs={g.label: g.n for g in groups}
    )
    return Figure(title, svg, "Successful sandbox starts of the whole run (start-up included), "
                  "admission wait excluded, pooled over each group's repeats.", key="sandboxes")  # fmt: skip


def _step_durations(record: RunRecord, trace: Trace) -> np.ndarray:
    frame = series.step_breakdown(trace).frame
    return frame.loc[frame["step"] > _warmup(record), "step_s"].dropna().to_numpy(dtype=float)


def _step_times(groups: Sequence[RunGroup], traces: dict[str, Trace], colors: dict[str, str]) -> Figure:
    title = "Per-step time distribution"
    durations = [np.concatenate([_step_durations(r, traces[r.run_id]) for r in g.records]) for g in groups]
    if not any(len(d) for d in durations):
        return Figure(title, unavailable="No run has per-step trainer durations.", key="step_times")
    labels = [f"{g.label} (n={g.n})" for g in groups]
    svg = compare_plots.step_time_boxes(labels, durations, [colors[g.label] for g in groups])
    return Figure(title, svg, "Trainer step durations after warm-up, pooled over repeats.", key="step_times")


def _reward_curve(record: RunRecord, trace: Trace) -> compare_plots.RewardCurve | None:
    """A run's logged training reward at each step's end, in seconds and GPU-hours; None without both."""
    ctx = MetricContext(trace)
    rows, ends = quality.quality_rows(ctx, K.QUALITY_REWARD), quality.step_end_times(ctx)
    if ends is None:
        return None
    rows = rows[rows["step"].isin(list(ends[0]))]
    if not len(rows):
        return None
    seconds = np.array([ends[0][int(step)] for step in rows["step"]])
    res = record.spec.get("resources")
    gpus = sum(gpu_counts(res)) if isinstance(res, dict) else 0
    return compare_plots.RewardCurve(seconds, rows["value"].to_numpy(dtype=float),
                                     seconds * gpus / 3600 if gpus else None)  # fmt: skip


def _shared_reward_target(groups: Sequence[RunGroup]) -> float | None:
    """The training-reward target every run was judged by, when they share one."""
    text = shared_target(groups)
    target = Target.parse(text) if text else None
    return target.value if target is not None and target.key == K.QUALITY_REWARD else None


def _learning(groups: Sequence[RunGroup], traces: dict[str, Trace], colors: dict[str, str]) -> Figure:
    title = "Training reward against time"
    curves = {g.label: [c for r in g.records if (c := _reward_curve(r, traces[r.run_id])) is not None]
              for g in groups}  # fmt: skip
    curves = {label: runs for label, runs in curves.items() if runs}
    if not curves:
        return Figure(title, unavailable="No run logged a training reward (quality.reward_mean).", key="learning")
    target = _shared_reward_target(groups)
    svg = compare_plots.reward_curves(curves, colors, target)
    matched = "".join(f"{line}. " for line in matched_quality(groups))
    caption = (f"{matched}The training reward each run logged, at the end of its step, warm-up included; GPU-hours "
               "are the run's trainer + generator GPUs × time (shown when every run's spec states its GPUs). The "
               "simulator models no learning: its runs have no reward.")  # fmt: skip
    return Figure(title, svg, caption, key="learning")


def _per_gpu(groups: Sequence[RunGroup], aggregated: dict[str, list[Interval | None]]) -> list[Figure]:
    title = "Throughput per GPU"
    caption = (f"Trained samples per second divided by {GPU_DENOMINATOR}: the same denominator for every mode and "
               "framework.")  # fmt: skip
    if not any(aggregated.get("trainer_throughput" + PER_GPU_SUFFIX, [])):
        why = "no run's spec states its GPUs (ingested runs do not), or no run has trainer_throughput_sps"
        return [Figure(title, unavailable=f"Not available ({why}).", key="per_gpu")]
    names = {"trainer_throughput" + PER_GPU_SUFFIX: "trained samples/s per GPU"}
    out = [_bars("per_gpu", title + " (samples)", groups, aggregated, names, "throughput (samples/s per GPU)",
                 caption + " n/a: the run's spec states no GPUs.", False)]  # fmt: skip
    tokens = {n: n.removesuffix(PER_GPU_SUFFIX).replace("_", " ") + " per GPU" for n in aggregated
              if n.endswith(PER_GPU_SUFFIX) and "token" in n}  # fmt: skip
    if tokens:
        caption = f"Tokens per second divided by {GPU_DENOMINATOR}."
        out.append(_bars("per_gpu_tokens", title + " (tokens)", groups, aggregated, tokens,
                         "throughput (tokens/s per GPU)", caption, False))  # fmt: skip
    return out


def _curves(groups: Sequence[RunGroup], records: Sequence[RunRecord]) -> list[Figure]:
    figures = []
    for axis in matrix_axes(groups):
        found = {name: curves for name in _headline(directed=True) if (curves := matrix_curves(groups, axis, name))}
        if "trainer_throughput" + PER_GPU_SUFFIX in found:  # raw throughput only without GPUs
            found.pop("trainer_throughput_sps", None)
        panels = {name: (_unit(name, records), curves) for name, curves in list(found.items())[:MAX_CURVE_PANELS]}
        title = f"Matrix: metrics versus {axis}"
        if not panels:
            figures.append(Figure(title, unavailable="No headline metric along this axis.", key=f"matrix-{axis}"))
            continue
        caption = (f"Median over repeats at each value of {axis}, with an interval of the median as error bars (the "
                   "range of the repeats below six runs: 50% coverage at two runs, 87.5% at four; the metrics table "
                   "gives each one's coverage); one line per combination of the other matrix fields.")  # fmt: skip
        figures.append(Figure(title, compare_plots.matrix_panels(axis, panels), caption, key=f"matrix-{axis}"))
    return figures


def build_comparison(runs: Sequence[tuple[RunRecord, Trace]]) -> ComparisonSection:
    """The comparison of these runs: repeats grouped by (adapter, spec) and aggregated, figures side by side."""
    records = [r for r, _ in runs]
    traces = {r.run_id: t for r, t in runs}
    groups = group_runs(records)
    aggregated = aggregate(groups)
    colors = dict(zip((g.label for g in groups), compare_plots.group_colors(len(groups)), strict=True))
    differs = what_differs(groups)
    figures: list[Figure] = [
        *_per_gpu(groups, aggregated),
        _breakdown(groups, aggregated),
        _bars(
            "generator",
            "Generator utilisation and admission",
            groups,
            aggregated,
            {
                "generator_utilization": "utilisation",
                "generator_admission_idle_ratio": "slot-time held back",
                "generator_paused_ratio": "paused (free slots held back)",
            },
            "fraction of the window (%)",
            "Utilisation: busy slot-time / (slots × window). Slot-time held back: free slots that admission "
            "(staleness bound, synchronous alternation, weight sync) kept idle. Paused: share of the window in "
            "which any free slots were held back.",
        ),  # fmt: skip
        _gpu_busy(groups, aggregated),
        _staleness(groups, traces, colors),
        _sandboxes(groups, traces, colors),
        _step_times(groups, traces, colors),
        _learning(groups, traces, colors),
        _bars(
            "waste",
            "Zero-advantage groups and wasted generation",
            groups,
            aggregated,
            {
                "zero_adv_group_fraction": "zero-advantage groups",
                "wasted_generation_fraction": "wasted samples",
                "dropped_stale_fraction": "dropped for staleness",
            },
            "fraction (%)",
            "Zero-advantage: finished groups whose rewards all agree. Wasted: finished samples "
            "never trained on (dropped, filtered, discarded).",
        ),  # fmt: skip
        *_curves(groups, records),
    ]
    verdicts, verdicts_note = verdict_table(groups)
    return ComparisonSection(
        verdicts=verdicts,
        verdicts_note=verdicts_note,
        groups=_group_table(groups, traces),
        differs=TextTable(("field", *(g.label for g in groups)), tuple((f, *v) for f, v in differs)),
        metrics=_metrics_table(groups, aggregated),
        figures=tuple(figures),
        denominator=GPU_DENOMINATOR,
        framework_figures=framework_figures(groups, aggregated, _units(aggregated, records)),
    )


def _units(aggregated: dict[str, list[Interval | None]], records: Sequence[RunRecord]) -> dict[str, str]:
    return {name: _unit(name, records) for name in aggregated}


def markdown_comparison(records: Sequence[RunRecord]) -> str:
    """The comparison as a compact Markdown table: headline metrics by group, median [interval] (coverage) n."""
    groups = group_runs(records)
    aggregated = aggregate(groups, _headline())
    rows = [(name, values) for name, values in aggregated.items() if any(values)]
    lines = ["## Comparison (median [interval] (what it is, its coverage) n=runs, per group of repeats)", ""]
    lines.append("| metric | unit | " + " | ".join(g.label.replace("|", "\\|") for g in groups) + " |")
    lines.append("|" + "---|" * (2 + len(groups)))
    lines += [f"| {name} | {_unit(name, records)} | " + " | ".join(map(_interval_cell, values)) + " |"
              for name, values in rows]  # fmt: skip
    differs = what_differs(groups)
    if differs:
        shown = "; ".join(f"{field}: {' vs '.join(values)}" for field, values in differs[:MARKDOWN_DIFFERS])
        hidden = len(differs) - MARKDOWN_DIFFERS
        more = f"; and {hidden} more fields (see the HTML report)" if hidden > 0 else ""
        lines += ["", f"What differs: {shown}{more}"]
    matched = matched_quality(groups)
    if matched:
        lines += ["", "### At matched quality", "", *(f"- {line}" for line in matched)]
    everything = aggregate(groups)
    figures = framework_figures(groups, everything, _units(everything, records))
    if figures is not None:
        lines += ["", "### The frameworks' own figures", ""]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in figures.table.header) + " |")
        lines.append("|" + "---|" * len(figures.table.header))
        lines += ["| " + " | ".join(row) + " |" for row in figures.table.rows]
        lines += ["", *(f"- {note}" for note in figures.notes)]
    return "\n".join(lines) + "\n\n"
