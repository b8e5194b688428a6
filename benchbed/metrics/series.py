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
from benchbed.trace import Trace

COMPONENTS: tuple[str, ...] = ("wait", "compute", "weight_sync", "checkpoint", "other")
_NAMED_KEYS: tuple[str, ...] = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT)


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

    Spans win over agg rows. `other` is the unexplained rest of the step (step − the four named parts,
    never negative), as in the trainer ratios; without a step total it is the logged trainer.other.
    """
    for kind in ("span", "agg"):
        parts = {}
        for key in (*_NAMED_KEYS, K.TRAINER_OTHER, K.TRAINER_STEP):
            rows = _rows(trace, key, kind, ["step", "t0", "t1", "value"])
            rows = rows[rows["step"] >= 0]
            seconds = rows["t1"] - rows["t0"] if kind == "span" else rows["value"]
            parts[key] = seconds.groupby(rows["step"]).sum()
        if not any(len(parts[k]) for k in (*_NAMED_KEYS, K.TRAINER_OTHER)):
            continue
        frame = pd.DataFrame(parts).sort_index()
        named = frame[list(_NAMED_KEYS)].fillna(0.0)
        step_s = frame[K.TRAINER_STEP]
        rest = (step_s - named.sum(axis=1)).clip(lower=0.0)
        other = rest.where(step_s.notna(), frame[K.TRAINER_OTHER]).fillna(0.0)
        out = pd.DataFrame(
            {name: named[key] for name, key in zip(COMPONENTS[:4], _NAMED_KEYS, strict=True)}, index=frame.index
        )
        out["other"] = other
        out["step_s"] = step_s.where(step_s.notna(), out[list(COMPONENTS)].sum(axis=1))
        out.index = out.index.astype("int64")
        out.index.name = "step"
        return StepSeries(out.reset_index(), "trainer spans" if kind == "span" else "per-step agg rows")
    empty = pd.DataFrame({c: pd.Series(dtype="float64") for c in ("step", *COMPONENTS, "step_s")})
    return StepSeries(empty.astype({"step": "int64"}), "")


def staleness_values(trace: Trace, warmup_steps: int = 0) -> np.ndarray:
    """v_train − v_start of trained rollouts (status ok, versions known) in steps after `warmup_steps`."""
    r = _rows(trace, K.ROLLOUT, None, ["status", "v_start", "v_train", "step"])
    r = r[(r["status"] == "ok") & (r["v_start"] >= 0) & (r["v_train"] >= 0) & (r["step"] > warmup_steps)]
    return np.clip((r["v_train"] - r["v_start"]).to_numpy(dtype=np.int64), 0, None)


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


def sandbox_starts(trace: Trace) -> pd.DataFrame:
    """One row per sandbox.start attempt: level, status, start_s (NaN without an end time), sorted per level.

    A sandbox-bench sweep's starts carry their concurrency level (through `starts_by_level`); other runs'
    starts (e.g. prime-rl sandbox boots) form one group at level NO_LEVEL.
    """
    from benchbed.sandbox.bench import starts_by_level  # only traces with sandbox starts pay for this import

    levelled = starts_by_level(trace)
    if len(levelled):
        return levelled
    rows = _rows(trace, K.SANDBOX_START, None, ["status", "t0", "t1"])
    out = pd.DataFrame({"level": NO_LEVEL, "status": rows["status"].astype(str).to_numpy(),
                        "start_s": (rows["t1"] - rows["t0"]).to_numpy(dtype=float)})  # fmt: skip
    return out.sort_values("start_s", ignore_index=True)


def _sandbox_spans(trace: Trace, key: str, levelled: bool) -> pd.DataFrame:
    """Spans of a sandbox key with their level (columns level, status, t0, t1); unlevelled ones dropped in sweeps."""
    rows = _rows(trace, key, "span", ["status", "t0", "t1", "attrs"])
    if levelled:
        level = [json.loads(a).get("level", NO_LEVEL) if a else NO_LEVEL for a in rows["attrs"]]
    else:
        level = [NO_LEVEL] * len(rows)
    out = pd.DataFrame({"level": np.asarray(level, dtype=np.int64), "status": rows["status"].astype(str).to_numpy(),
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
    """Per level: attempts, failures, failure_rate, ok_timed, start_p50_s, start_p99_s, queued, queue_p50_s,
    queue_p99_s, starts_per_s. As in the sandbox metrics, start percentiles are over successful starts and
    queue percentiles over every sandbox.queue span; starts_per_s = successful starts / (last ready − first
    request), the request being the earliest sandbox.queue (or sandbox.start) begin of the level."""
    starts = sandbox_starts(trace)
    levelled = bool((starts["level"] != NO_LEVEL).any())
    queues = _sandbox_spans(trace, K.SANDBOX_QUEUE, levelled)
    start_spans = _sandbox_spans(trace, K.SANDBOX_START, levelled)
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
            "failure_rate": float((group["status"] != "ok").mean()), "ok_timed": len(ok),
            "start_p50_s": _pct(ok, 50), "start_p99_s": _pct(ok, 99), "queued": len(wait_s),
            "queue_p50_s": _pct(wait_s, 50), "queue_p99_s": _pct(wait_s, 99),
            "starts_per_s": len(ready) / elapsed if elapsed > 0 else np.nan,
        })  # fmt: skip
    columns = ["level", "attempts", "failures", "failure_rate", "ok_timed", "start_p50_s", "start_p99_s", "queued",
               "queue_p50_s", "queue_p99_s", "starts_per_s"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns).astype(
        {"level": "int64", "attempts": "int64", "failures": "int64", "ok_timed": "int64", "queued": "int64"}
    )


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
