"""Plot-ready series derived from a Trace (per-step breakdown, staleness, utilisation, groups, timeline, sandboxes).

These are pure functions for reports: they shape data, they are not metrics (those live in the registry)
and they never plot. Each returns an empty result when the trace lacks the data; callers say why.
"""

from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.metrics import samples as sample_metrics
from benchbed.metrics import trainer as trainer_metrics
from benchbed.metrics.context import MetricContext
from benchbed.trace import Trace

COMPONENTS: tuple[str, ...] = ("wait", "compute", "weight_sync", "checkpoint", "other")
_NAMED_KEYS: tuple[str, ...] = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)
_KEYS: tuple[str, ...] = (*_NAMED_KEYS, K.TRAINER_OTHER)  # in the order of COMPONENTS


@dataclass(frozen=True)
class StepSeries:
    """A per-step table and how it was derived (a short phrase for captions; "" when empty)."""

    frame: pd.DataFrame
    source: str


def _rows(trace: Trace, key: str, kind: str | None, columns: list[str]) -> pd.DataFrame:
    """Rows with this key (and kind), only the columns asked for: copying all columns of 1M rows is slow."""
    events = trace.events
    mask = events["key"] == key
    if kind is not None:
        mask &= events["kind"] == kind
    return events.loc[mask.to_numpy(), columns]


def step_breakdown(trace: Trace) -> StepSeries:
    """Seconds per trainer step in wait/compute/weight_sync/checkpoint/other, plus the step total `step_s`.

    The same derivation as the trainer ratios (metrics.trainer.step_breakdown): spans win over agg rows,
    overlapping components lose the overlap from compute, `other` is the unexplained rest of the step; components
    never logged are 0 here, and a step without a total gets the sum of its components.
    """
    result = trainer_metrics.step_breakdown(MetricContext(trace, warmup_steps=0))
    if result is None:
        empty = pd.DataFrame({c: pd.Series(dtype="float64") for c in ("step", *COMPONENTS, "step_s")})
        return StepSeries(empty.astype({"step": "int64"}), "")
    frame = result.frame
    out = pd.DataFrame(
        {name: frame[key].fillna(0.0) if key in frame else 0.0 for name, key in zip(COMPONENTS, _KEYS, strict=True)},
        index=frame.index,
    )
    out["step_s"] = frame["step_s"].where(frame["step_s"].notna(), out[list(COMPONENTS)].sum(axis=1))
    out.index.name = "step"
    source = "trainer spans" if result.kind == "span" else "per-step agg rows"
    if result.overlap:
        source += f" (overlap taken out of compute in {len(result.overlap)} step(s) where components overlap)"
    return StepSeries(out.reset_index(), source)


def staleness_values(trace: Trace, warmup_steps: int = 0) -> np.ndarray:
    """v_train − v_start of the trained rollouts in the metric window: the values the staleness metrics use."""
    return sample_metrics.staleness_values(MetricContext(trace, warmup_steps=warmup_steps)).astype(np.int64)


def running_rollouts(trace: Trace, bins: int = 400) -> pd.DataFrame:
    """Time-averaged number of running rollouts per time bin, from an event sweep over rollout spans.

    Columns t0, t1 (bin edges, seconds), running (mean rollouts in flight), and utilisation (running /
    meta.concurrency; NaN when the concurrency is unknown). Empty without rollout spans.
    """
    spans = _rows(trace, K.ROLLOUT, "span", ["t0", "t1"])
    columns = ("t0", "t1", "running", "utilisation")
    if not len(spans):
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns})
    starts = spans["t0"].to_numpy(dtype=float)
    ends = spans["t1"].to_numpy(dtype=float)
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    running_after = np.cumsum(deltas)
    # Integral of the running count up to each event time; piecewise linear between events.
    area = np.concatenate([[0.0], np.cumsum(running_after[:-1] * np.diff(times))])
    lo, hi = float(times[0]), float(times[-1])
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    mean = np.diff(np.interp(edges, times, area)) / np.diff(edges)
    concurrency = trace.meta.concurrency
    util = mean / concurrency if concurrency else np.full(len(mean), np.nan)
    return pd.DataFrame({"t0": edges[:-1], "t1": edges[1:], "running": mean, "utilisation": util})


def zero_adv_per_step(trace: Trace) -> StepSeries:
    """Finished and zero-advantage groups per trainer step (columns step, groups, zero_adv).

    From rollout.group rows (value = reward std; 0 means zero advantage): a group counts in the step
    whose trainer.step span contains its finish time, or in its own `step` when times are missing.
    Otherwise from the groups.finished / groups.zero_adv agg rows.
    """
    groups = _rows(trace, K.ROLLOUT_GROUP, None, ["t0", "value", "step"])
    if len(groups):
        steps = _rows(trace, K.TRAINER_STEP, "span", ["step", "t0", "t1"]).sort_values("t1")
        timed = groups["t0"].notna().all() and len(steps)
        step_of = _step_at(groups["t0"].to_numpy(), steps) if timed else groups["step"].to_numpy()
        zero = (groups["value"].abs() < 1e-12).to_numpy()
        keep = step_of >= 0
        frame = pd.DataFrame({"step": step_of[keep], "zero_adv": zero[keep].astype(np.int64)})
        out = frame.groupby("step")["zero_adv"].agg(groups="size", zero_adv="sum").reset_index()
        how = "rollout.group rows by finish time" if timed else "rollout.group rows by their step"
        return StepSeries(out.astype("int64"), how)
    finished = _rows(trace, K.GROUPS_FINISHED, "agg", ["step", "value"])
    zero_rows = _rows(trace, K.GROUPS_ZERO_ADV, "agg", ["step", "value"])
    if len(finished) and len(zero_rows):
        out = pd.DataFrame(
            {"groups": finished.groupby("step")["value"].sum(), "zero_adv": zero_rows.groupby("step")["value"].sum()}
        ).fillna(0.0)
        out = out[out.index >= 0]
        out.index.name = "step"
        return StepSeries(out.reset_index().astype("int64"), "groups.finished / groups.zero_adv agg rows")
    empty = pd.DataFrame({c: pd.Series(dtype="int64") for c in ("step", "groups", "zero_adv")})
    return StepSeries(empty, "")


def _step_at(times: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    """The step whose (t0, t1] span contains each time, or -1 outside every step."""
    t0 = steps["t0"].to_numpy(dtype=float)
    t1 = steps["t1"].to_numpy(dtype=float)
    idx = np.searchsorted(t1, times, side="left")
    inside = idx < len(t1)
    idx_c = np.minimum(idx, len(t1) - 1)
    inside &= times > t0[idx_c]
    return np.where(inside, steps["step"].to_numpy()[idx_c], -1)


_OTHER_LANES: tuple[tuple[str, str], ...] = (
    *((key, "trainer") for key in (*_NAMED_KEYS, K.TRAINER_OTHER)),
    (K.GENERATOR_PAUSED, "generator.paused"),
)


def _natural_key(name: str) -> tuple[str, int]:
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)


def _overlaps_within(actor: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> bool:
    """True if two spans of the same actor overlap in time (the actor is then not a generator slot)."""
    order = np.lexsort((t0, actor))
    a, s, e = actor[order], t0[order], t1[order]
    same = a[1:] == a[:-1]
    return bool((same & (s[1:] < e[:-1])).any())


def _pack_lanes(t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Greedy interval packing: each span (in start order) takes the lowest lane free by its start; O(n log n)."""
    lanes = np.empty(len(t0), dtype=np.int64)
    busy: list[tuple[float, int]] = []  # (end, lane) of spans still running
    free: list[int] = []
    opened = 0
    for i in np.argsort(t0, kind="stable"):
        while busy and busy[0][0] <= t0[i]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, opened = opened, opened + 1
        heapq.heappush(busy, (float(t1[i]), lane))
        lanes[i] = lane
    return lanes


def timeline_rows(trace: Trace, steps: int = 3, max_lanes: int = 48, max_rollouts: int = 2000) -> pd.DataFrame:
    """Spans of the first `steps` trainer steps for a lane chart: rollouts by generator slot, trainer parts.

    Columns lane, t0, t1, key, status. Rollout lanes are the rollout's `actor` (e.g. "slot/3"), or packed
    lanes ("lane/N") when actors are missing or are not slots (one actor's rollouts overlap in time); only
    the first `max_lanes` lanes are kept. The trainer's component spans form lane "trainer", generator.paused
    spans lane "generator.paused". Spans are clipped to the window [first step start, end of step `steps`];
    without trainer spans the window ends where the first `max_rollouts` rollouts have started.
    """
    columns = {"lane": "str", "t0": "float64", "t1": "float64", "key": "str", "status": "str"}
    empty = pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns.items()})
    step_spans = _rows(trace, K.TRAINER_STEP, "span", ["step", "t0", "t1"])
    rollouts = _rows(trace, K.ROLLOUT, "span", ["t0", "t1", "actor", "status"])
    if len(step_spans):
        first = step_spans.sort_values("step").head(steps)
        w0 = min(float(first["t0"].min()), float(rollouts["t0"].min()) if len(rollouts) else np.inf)
        w1 = float(first["t1"].max())
    elif len(rollouts):
        starts = np.sort(rollouts["t0"].to_numpy(dtype=float))
        w0 = float(starts[0])
        w1 = float(starts[max_rollouts]) if len(starts) > max_rollouts else float(rollouts["t1"].max())
    else:
        return empty
    parts = []
    if len(rollouts):
        r = rollouts[(rollouts["t0"] < w1) & (rollouts["t1"] > w0)]
        actor = r["actor"].astype(str).to_numpy()
        t0, t1 = r["t0"].to_numpy(dtype=float), r["t1"].to_numpy(dtype=float)
        if (actor != "").all() and not _overlaps_within(actor, t0, t1):
            lane = actor
        else:
            lane = np.char.add("lane/", _pack_lanes(t0, t1).astype(str))
        kept = sorted(set(lane), key=_natural_key)[:max_lanes]
        keep = np.isin(lane, kept)
        r = r[keep]
        parts.append(pd.DataFrame({"lane": lane[keep], "t0": r["t0"].to_numpy(), "t1": r["t1"].to_numpy(),
                                   "key": K.ROLLOUT, "status": r["status"].astype(str).to_numpy()}))  # fmt: skip
    for key, lane_name in _OTHER_LANES:
        s = _rows(trace, key, "span", ["t0", "t1", "status"])
        s = s[(s["t0"] < w1) & (s["t1"] > w0)]
        if len(s):
            parts.append(pd.DataFrame({"lane": lane_name, "t0": s["t0"].to_numpy(), "t1": s["t1"].to_numpy(),
                                       "key": key, "status": s["status"].astype(str).to_numpy()}))  # fmt: skip
    if not parts:
        return empty
    out = pd.concat(parts, ignore_index=True)
    out["t0"] = out["t0"].clip(lower=w0)
    out["t1"] = out["t1"].clip(upper=w1)
    return out.astype(columns)


NO_LEVEL = -1  # the level of sandbox starts in runs that are not concurrency sweeps: they form one group
CDF_POINTS = 400  # a start-latency CDF keeps at most this many ranks per level


def _level_of(attrs: pd.Series) -> np.ndarray:
    """The concurrency level in each row's attrs (sandbox-bench sweeps), NO_LEVEL where there is none."""
    levels = [json.loads(a).get("level") if a else None for a in attrs]
    return np.asarray([NO_LEVEL if lv is None else int(lv) for lv in levels], dtype=np.int64)


def sandbox_starts(trace: Trace) -> pd.DataFrame:
    """One row per sandbox.start attempt: level, status, start_s (NaN without an end time), sorted per level.

    A sandbox-bench sweep's starts carry their concurrency level in attrs (unlevelled ones are then dropped);
    other runs' starts (e.g. prime-rl sandbox boots) form one group at level NO_LEVEL.
    """
    rows = _rows(trace, K.SANDBOX_START, None, ["status", "t0", "t1", "attrs"])
    out = pd.DataFrame({"level": _level_of(rows["attrs"]), "status": rows["status"].astype(str).to_numpy(),
                        "start_s": (rows["t1"] - rows["t0"]).to_numpy(dtype=float)})  # fmt: skip
    if (out["level"] != NO_LEVEL).any():
        out = out[out["level"] != NO_LEVEL]
    return out.sort_values(["level", "start_s"], ignore_index=True)


def _sandbox_spans(trace: Trace, key: str, levelled: bool) -> pd.DataFrame:
    """Spans of a sandbox key with their level (columns level, status, t0, t1); unlevelled ones dropped in sweeps."""
    rows = _rows(trace, key, "span", ["status", "t0", "t1", "attrs"])
    level = _level_of(rows["attrs"]) if levelled else np.full(len(rows), NO_LEVEL, dtype=np.int64)
    out = pd.DataFrame({"level": level, "status": rows["status"].astype(str).to_numpy(),
                        "t0": rows["t0"].to_numpy(dtype=float), "t1": rows["t1"].to_numpy(dtype=float)})  # fmt: skip
    return out[out["level"] != NO_LEVEL] if levelled else out


def sandbox_start_cdf(trace: Trace, max_points: int = CDF_POINTS) -> pd.DataFrame:
    """Empirical CDF of successful start latencies per level (columns level, start_s, fraction).

    fraction = i / n for the i-th fastest of a level's n successful timed starts; a level with more than
    `max_points` starts keeps `max_points` evenly spaced ranks (always the slowest), so the plot stays small.
    """
    starts = sandbox_starts(trace)
    ok = starts[(starts["status"] == "ok") & starts["start_s"].notna()]
    parts = []
    for level, group in ok.groupby("level", sort=True):
        values = np.sort(group["start_s"].to_numpy(dtype=float))
        n = len(values)
        ranks = np.arange(1, n + 1) if n <= max_points else np.unique(np.linspace(1, n, max_points).round()).astype(int)
        parts.append(pd.DataFrame({"level": level, "start_s": values[ranks - 1], "fraction": ranks / n}))
    if not parts:
        return pd.DataFrame({"level": pd.Series(dtype="int64"), "start_s": pd.Series(dtype="float64"),
                             "fraction": pd.Series(dtype="float64")})  # fmt: skip
    return pd.concat(parts, ignore_index=True).astype({"level": "int64"})


def sandbox_levels(trace: Trace) -> pd.DataFrame:
    """Per level: attempts, failures, failure_rate, reasons, ok_timed, start_p50_s, start_p99_s, queued,
    queue_p50_s, queue_p99_s, starts_per_s, exec_failures. As in the sandbox metrics, start percentiles are over
    successful starts and queue percentiles over every sandbox.queue span; starts_per_s = successful starts /
    (last ready − first request), the request being the earliest sandbox.queue (or sandbox.start) begin of the
    level. A sandbox-bench sweep adds what it measured outside the spans (see `with_bench_baseline`)."""
    starts = sandbox_starts(trace)
    levelled = bool((starts["level"] != NO_LEVEL).any())
    queues = _sandbox_spans(trace, K.SANDBOX_QUEUE, levelled)
    start_spans = _sandbox_spans(trace, K.SANDBOX_START, levelled)
    execs = _sandbox_spans(trace, K.SANDBOX_EXEC, levelled)
    rows = []
    for level, group in starts.groupby("level", sort=True):
        ok = group.loc[group["status"] == "ok", "start_s"].dropna().to_numpy()
        waits = queues[queues["level"] == level]
        wait_s = (waits["t1"] - waits["t0"]).to_numpy()
        spans = start_spans[start_spans["level"] == level]
        ready = spans.loc[spans["status"] == "ok", "t1"].to_numpy()
        first = np.concatenate([waits["t0"].to_numpy(), spans["t0"].to_numpy()])
        elapsed = float(ready.max() - first.min()) if len(ready) else 0.0
        rows.append({
            "level": int(level), "attempts": len(group), "failures": int((group["status"] != "ok").sum()),
            "failure_rate": float((group["status"] != "ok").mean()),
            "reasons": sorted(set(group.loc[group["status"] != "ok", "status"])), "ok_timed": len(ok),
            "start_p50_s": _pct(ok, 50), "start_p99_s": _pct(ok, 99), "queued": len(wait_s),
            "queue_p50_s": _pct(wait_s, 50), "queue_p99_s": _pct(wait_s, 99),
            "starts_per_s": len(ready) / elapsed if elapsed > 0 else np.nan,
            "exec_failures": int((execs.loc[execs["level"] == level, "status"] != "ok").sum()),
        })  # fmt: skip
    columns = ["level", "attempts", "failures", "failure_rate", "reasons", "ok_timed", "start_p50_s", "start_p99_s",
               "queued", "queue_p50_s", "queue_p99_s", "starts_per_s", "exec_failures"]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns).astype(
        {"level": "int64", "attempts": "int64", "failures": "int64", "ok_timed": "int64", "queued": "int64",
         "exec_failures": "int64"}
    )  # fmt: skip
    return with_bench_baseline(frame, trace)


def with_bench_baseline(levels: pd.DataFrame, trace: Trace) -> pd.DataFrame:
    """Add a sandbox-bench sweep's per-level measurements that spans cannot hold: n (sandboxes requested),
    wall_s, completions_per_s = n / wall_s, and with a bare fork/exec baseline bare_completions_per_s,
    start_ratio_vs_bare (bare completions/s ÷ starts/s) and slowdown_vs_bare (bare ÷ sandboxed completions/s)."""
    measured = (trace.meta.extra.get("sandbox_bench") or {}).get("measured")
    if not isinstance(measured, list) or not measured:
        return levels
    by_level = pd.DataFrame(measured).set_index("level")
    out = levels.join(by_level[["n", "wall_s", "bare_s"]], on="level")
    out["completions_per_s"] = out["n"] / out["wall_s"]
    bare = out["n"] / out["bare_s"].astype(float)
    if bare.notna().any():
        out["bare_completions_per_s"] = bare
        out["start_ratio_vs_bare"] = bare / out["starts_per_s"]
        out["slowdown_vs_bare"] = bare / out["completions_per_s"]
    return out.drop(columns="bare_s")


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else np.nan


def sandbox_failure_reasons(trace: Trace) -> pd.DataFrame:
    """Failed sandbox starts per level and reason (columns level, reason, failures, rate = failures / the
    level's attempts), reasons in the order of keys.SANDBOX_FAILURE_REASONS, others after them by name."""
    starts = sandbox_starts(trace)
    attempts = starts.groupby("level").size()
    failed = starts[starts["status"] != "ok"]
    counts = failed.groupby(["level", "status"]).size().rename("failures").reset_index()
    counts = counts.rename(columns={"status": "reason"})
    order = {reason: i for i, reason in enumerate(K.SANDBOX_FAILURE_REASONS)}
    counts["_order"] = counts["reason"].map(lambda r: order.get(r, len(order)))
    counts = counts.sort_values(["level", "_order", "reason"], ignore_index=True).drop(columns="_order")
    counts["rate"] = counts["failures"] / counts["level"].map(attempts).to_numpy()
    return counts.astype({"level": "int64", "failures": "int64", "rate": "float64"})
