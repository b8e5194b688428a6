"""The metric window (docs/reference/metrics.md) and per-key views of a trace, computed once and shared
by all metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from benchbed import keys as K
from benchbed.trace import Trace

FINISHED_STATUSES = ("ok", "dropped_stale", "filtered_zero_adv", "discarded")
NOT_TRAINED_STATUSES = ("dropped_stale", "filtered_zero_adv", "discarded")


@dataclass
class MetricContext:
    """A trace with its window resolved: steps numbered above warmup_steps, and their time span."""

    trace: Trace
    warmup_steps: int = 1
    warnings: list[str] = field(default_factory=list)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def memo(self, name: str, compute: Callable[[], Any]) -> Any:
        """Compute a shared intermediate once per context."""
        if name not in self._memo:
            self._memo[name] = compute()
        return self._memo[name]

    @cached_property
    def by_key(self) -> dict[str, pd.DataFrame]:
        events = self.trace.events
        return {str(k): g for k, g in events.groupby("key", observed=True, sort=False)}

    def rows(self, key: str, kind: str | None = None) -> pd.DataFrame:
        df = self.by_key.get(key)
        if df is None:
            return self.trace.events.iloc[0:0]
        return df if kind is None else df[df["kind"] == kind]

    @cached_property
    def step_spans(self) -> pd.DataFrame:
        spans = self.rows(K.TRAINER_STEP, "span")
        return spans[spans["step"] > self.warmup_steps]

    @cached_property
    def step_aggs(self) -> pd.DataFrame:
        aggs = self.rows(K.TRAINER_STEP, "agg")
        return aggs[aggs["step"] > self.warmup_steps]

    @property
    def has_spans(self) -> bool:
        return len(self.step_spans) > 0

    @cached_property
    def window(self) -> tuple[float, float] | None:
        """(t_start, t_end) of the window in seconds, when trainer.step spans exist."""
        if not self.has_spans:
            return None
        t0, t1 = float(self.step_spans["t0"].min()), float(self.step_spans["t1"].max())
        if not t1 > t0:  # e.g. second-resolution timestamps where every window step has zero length
            steps = self.step_spans["step"]
            self.warnings.append(
                f"the metric window (steps {int(steps.min())}-{int(steps.max())}) has zero length "
                f"(t0 = t1 = {t0:g} s): metrics per second of the window are left out"
            )
            return None
        return t0, t1

    @cached_property
    def window_steps(self) -> np.ndarray:
        source = self.step_spans if self.has_spans else self.step_aggs
        return np.sort(source["step"].unique())

    @cached_property
    def window_seconds(self) -> tuple[float, str] | None:
        """Window length and where it came from: span extent, or the sum of per-step durations."""
        if self.window is not None:
            return self.window[1] - self.window[0], "span"
        if len(self.step_aggs) and not self.has_spans:
            total = float(self.step_aggs["value"].sum())
            return (total, "agg") if total > 0 else None
        return None

    def in_window_steps(self, df: pd.DataFrame) -> pd.DataFrame:
        return df[df["step"].isin(self.window_steps)]

    @cached_property
    def rollouts(self) -> pd.DataFrame:
        return self.rows(K.ROLLOUT)

    @cached_property
    def finished_in_window(self) -> pd.DataFrame:
        """Rollouts whose generation finished inside the window (by t1 for spans, by step otherwise)."""
        r = self.rollouts
        r = r[r["status"].isin(FINISHED_STATUSES)]
        if not len(r):
            return r
        timed = r["kind"] == "span"
        parts = []
        if self.window is not None and timed.any():
            t0, t1 = self.window
            spans = r[timed]
            parts.append(spans[(spans["t1"] > t0) & (spans["t1"] <= t1)])
        untimed = r[~timed] if self.window is not None else r
        if len(untimed):
            parts.append(self.in_window_steps(untimed))
        return pd.concat(parts) if len(parts) > 1 else (parts[0] if parts else r.iloc[0:0])

    @cached_property
    def trained_in_window(self) -> pd.DataFrame:
        r = self.rollouts
        return self.in_window_steps(r[r["status"] == "ok"]) if len(r) else r

    def agg_sum(self, key: str) -> float | None:
        rows = self.in_window_steps(self.rows(key, "agg"))
        return float(rows["value"].sum()) if len(rows) else None
