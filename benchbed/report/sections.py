"""Per-run report sections: each is a figure with a caption, or a sentence saying why the trace cannot supply it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics import series
from benchbed.record import RunRecord
from benchbed.report import plots
from benchbed.report.tables import TextTable, sandbox_bench_table
from benchbed.trace import Trace

TIMELINE_STEPS = 3
TITLES = {
    "breakdown": "Trainer time per step",
    "staleness": "Staleness of trained samples",
    "utilisation": "Generator utilisation over time",
    "zero_adv": "Zero-advantage groups per step",
    "timeline": f"Timeline of the first {TIMELINE_STEPS} steps",
    "sandboxes": "Sandboxes",
}


@dataclass(frozen=True)
class Panel:
    """One of several figures in a section, with its own title and caption, or why it cannot be drawn."""

    title: str
    svg: str = ""
    caption: str = ""
    unavailable: str = ""


@dataclass(frozen=True)
class Section:
    """A titled figure (inline SVG) with its caption, or an introductory caption with a table and panels, or
    `unavailable` explaining why there is none."""

    key: str
    title: str
    svg: str = ""
    caption: str = ""
    unavailable: str = ""
    panels: tuple[Panel, ...] = ()
    table: TextTable | None = None


def _unavailable(key: str, title: str, why: str) -> Section:
    return Section(key, title, unavailable=f"Not available in this trace ({why}).")


def _has(trace: Trace, key: str, kind: str | None = None) -> bool:
    mask = trace.events["key"] == key
    if kind is not None:
        mask &= trace.events["kind"] == kind
    return bool(mask.any())


def breakdown_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "breakdown", TITLES["breakdown"]
    result = series.step_breakdown(trace)
    if not len(result.frame):
        return _unavailable(key, title, "no trainer.wait/compute/weight_sync/checkpoint/other spans or agg rows")
    caption = (
        f"Seconds per trainer step by component, from {result.source}; 'other' is the part of the step "
        f"the named components do not explain. {len(result.frame)} steps."
    )
    return Section(key, title, plots.step_breakdown(result.frame), caption)


COUNT_ADMISSION_NOTE = (
    "Count admission bounds how many samples start per policy version, not each sample's age: a slow sample can be "
    "trained more than max_staleness versions after it started, so staleness_max and staleness_p99 may exceed the "
    "bound."
)


def count_admission(record: RunRecord, trace: Trace) -> bool:
    """Whether the run was simulated with count admission (mode 'async/count'), where the staleness bound caps
    starts per version, not each sample's age (the reference engine's count policy caps ages: not meant here)."""
    sim = record.spec.get("sim")
    return "count" in (trace.meta.mode or "") or (isinstance(sim, dict) and sim.get("staleness_policy") == "count")


def staleness_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "staleness", TITLES["staleness"]
    if not _has(trace, K.ROLLOUT):
        return _unavailable(key, title, "no rollout rows")
    warmup = int(record.spec.get("warmup_steps", 1))
    values = series.staleness_values(trace, warmup_steps=warmup)
    if not len(values):
        return _unavailable(
            key, title, f"no trained rollouts with known v_start and v_train after warmup step {warmup}"
        )
    caption = f"v_train − v_start of {len(values)} trained samples in the steps after warmup step {warmup}."
    if count_admission(record, trace):
        caption += " " + COUNT_ADMISSION_NOTE
    return Section(key, title, plots.staleness_histogram(values), caption)


def utilisation_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "utilisation", TITLES["utilisation"]
    if not _has(trace, K.ROLLOUT, "span"):
        why = "rollouts have no start/end times" if _has(trace, K.ROLLOUT) else "no rollout spans"
        return _unavailable(key, title, why)
    frame = series.running_rollouts(trace)
    concurrency = trace.meta.concurrency
    caption = (
        f"Time-averaged running rollouts / {concurrency} generator slots in {len(frame)} time bins."
        if concurrency
        else "Running rollouts (the generator's concurrency is not recorded, so no utilisation ratio)."
    )
    return Section(key, title, plots.utilisation(frame, concurrency), caption)


def zero_adv_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "zero_adv", TITLES["zero_adv"]
    result = series.zero_adv_per_step(trace)
    if not len(result.frame):
        return _unavailable(key, title, "no rollout.group rows and no groups.finished/groups.zero_adv agg rows")
    total = int(result.frame["groups"].sum())
    zero = int(result.frame["zero_adv"].sum())
    caption = (
        f"Finished groups per step and those whose rewards all agree (no gradient), from {result.source}; "
        f"{zero} of {total} groups over all steps."
    )
    return Section(key, title, plots.zero_adv(result.frame), caption)


def timeline_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "timeline", TITLES["timeline"]
    rows = series.timeline_rows(trace, steps=TIMELINE_STEPS)
    if not len(rows):
        return _unavailable(key, title, "no trainer or rollout spans with timestamps")
    slots = int((rows["key"] == K.ROLLOUT).sum())
    lanes = rows.loc[rows["key"] == K.ROLLOUT, "lane"].nunique()
    caption = (
        f"{slots} rollout spans on {lanes} generator lane(s) (the first lanes only), trainer components and "
        f"generator pauses, {np.ptp(rows[['t0', 't1']].to_numpy()):.4g} s."
    )
    return Section(key, title, plots.timeline(rows), caption)


def _levels_phrase(levels: list[int]) -> str:
    if levels == [series.NO_LEVEL]:
        return "in one group (the trace has no concurrency levels)"
    return f"at concurrency levels {', '.join(map(str, levels))}"


def _per_level(title: str, levels: pd.DataFrame) -> str:
    """A panel title, naming levels only when the run swept them."""
    return title if levels["level"].tolist() == [series.NO_LEVEL] else f"{title} per concurrency level"


def _start_cdf_panel(trace: Trace, levels: pd.DataFrame) -> Panel:
    title = _per_level("Start latency CDF", levels)
    frame = series.sandbox_start_cdf(trace)
    if not len(frame):
        return Panel(title, unavailable="Not available in this trace (no successful sandbox.start spans with times).")
    whose = "successful starts" if levels["level"].tolist() == [series.NO_LEVEL] else "each level's successful starts"
    caption = (
        f"Fraction of {whose} ready within a latency (sandbox.start, create → ready: the wait for an admission "
        "slot is excluded, failed starts are in the failure panel)."
    )
    if int(levels["ok_timed"].max()) > series.CDF_POINTS:
        caption += f" Each curve is drawn through {series.CDF_POINTS} evenly spaced ranks."
    return Panel(title, plots.sandbox_start_cdf(frame), caption)


def _failures_panel(levels: pd.DataFrame, reasons: pd.DataFrame) -> Panel:
    by_reason = reasons.groupby("reason", sort=False)["failures"].sum()
    named = ", ".join(f"{reason} {int(n)}" for reason, n in by_reason.items())
    caption = (
        f"sandbox.start attempts whose status is not ok, stacked by reason, labelled failures/attempts; "
        f"{int(levels['failures'].sum())} of {int(levels['attempts'].sum())} attempts failed"
        + (f" ({named})." if named else ".")
    )
    return Panel(_per_level("Init failure rate", levels), plots.sandbox_failures(levels, reasons), caption)


def _throughput_panel(levels: pd.DataFrame) -> Panel:
    title = _per_level("Start throughput", levels)
    if not levels["starts_per_s"].notna().any():
        return Panel(title, unavailable="Not available in this trace (no successful sandbox.start spans with times).")
    if levels["level"].tolist() == [series.NO_LEVEL]:
        caption = (
            "Successful starts per second from the first request to the last sandbox ready; in a training run "
            "this follows the rollout schedule, so it is a lower bound on what the provider can start."
        )
    else:
        caption = "Successful starts per second, from the level's first request to its last sandbox ready."
    return Panel(title, plots.sandbox_throughput(levels), caption)


def _wait_panel(trace: Trace, levels: pd.DataFrame) -> Panel:
    title = "Queue wait vs start latency"
    if not _has(trace, K.SANDBOX_QUEUE, "span"):
        why = "no sandbox.queue spans: the run did not record waits for an admission slot"
        return Panel(title, unavailable=f"Not available in this trace ({why}).")
    caption = (
        "Wait for an admission slot (sandbox.queue) beside start-up once admitted (successful sandbox.start): "
        "a dot at the median, a bar up to the 99th percentile."
    )
    return Panel(title, plots.sandbox_wait_vs_start(levels), caption)


def sandboxes_section(record: RunRecord, trace: Trace) -> Section:
    key, title = "sandboxes", TITLES["sandboxes"]
    if not _has(trace, K.SANDBOX_START):
        return _unavailable(key, title, "no sandbox.start spans")
    levels = series.sandbox_levels(trace)
    table = sandbox_bench_table(trace)
    caption = f"{int(levels['attempts'].sum())} sandbox start attempts {_levels_phrase(levels['level'].tolist())}."
    if table is not None:
        caption += " The table and the figures are drawn from the same per-level series of the trace."
    panels = (
        _start_cdf_panel(trace, levels), _failures_panel(levels, series.sandbox_failure_reasons(trace)),
        _throughput_panel(levels), _wait_panel(trace, levels),
    )  # fmt: skip
    return Section(key, title, caption=caption, panels=panels, table=table)


BUILDERS: tuple[Callable[[RunRecord, Trace], Section], ...] = (
    breakdown_section, staleness_section, utilisation_section, zero_adv_section, timeline_section,
    sandboxes_section,
)  # fmt: skip


def build_sections(record: RunRecord, trace: Trace) -> list[Section]:
    """All sections for one run; a section that fails to draw says so instead of failing the report."""
    out = []
    for builder in BUILDERS:
        try:
            out.append(builder(record, trace))
        except Exception as exc:  # noqa: BLE001  (one bad plot must not lose the rest of the report)
            key = builder.__name__.removesuffix("_section")
            out.append(Section(key, TITLES[key], unavailable=f"Could not be drawn: {type(exc).__name__}: {exc}"))
    return out
