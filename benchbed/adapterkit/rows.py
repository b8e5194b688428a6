"""Fast bulk appends through TraceBuilder: rows gathered in plain lists, handed over in one call.

Parsing 10^4 steps x 300 keys or 10^5 episodes makes hundreds of thousands of rows; one builder call per row
would dominate the run time."""

from __future__ import annotations

import math
from typing import Any

from benchbed.trace import TraceBuilder


class AggRows:
    """Per-step agg rows (key, step, value, actor, attrs), kept column-wise: the cheapest form for many of them."""

    __slots__ = ("actor", "attrs", "key", "step", "value")

    def __init__(self) -> None:
        self.key: list[str] = []
        self.step: list[int] = []
        self.value: list[float] = []
        self.actor: list[str] = []
        self.attrs: list[str] = []

    def add(self, key: str, step: int, value: float, actor: str = "", attrs: str = "") -> None:
        self.key.append(key)
        self.step.append(step)
        self.value.append(value)
        self.actor.append(actor)
        self.attrs.append(attrs)

    def extend(self, key: str, steps: list[int], values: list[float], actor: str = "", attrs: str = "") -> None:
        """Many rows of one key at once."""
        n = len(steps)
        self.key += [key] * n
        self.step += steps
        self.value += values
        self.actor += [actor] * n
        self.attrs += [attrs] * n

    def __len__(self) -> int:
        return len(self.key)

    def flush(self, builder: TraceBuilder) -> None:
        """Append everything gathered to the builder and start empty."""
        if self.key:
            columns = {"key": self.key, "kind": "agg", "step": self.step, "value": self.value}
            builder.extend_columns(len(self.key), {**columns, "actor": self.actor, "attrs": self.attrs})
        self.key, self.step, self.value, self.actor, self.attrs = [], [], [], [], []


class EventRows:
    """Rows of any kind, as tuples in the trace's column order."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add(
        self,
        key: str,
        kind: str,
        step: int = -1,
        t0: float = math.nan,
        t1: float = math.nan,
        value: float = math.nan,
        actor: str = "",
        sample: str = "",
        group: str = "",
        v_start: int = -1,
        v_end: int = -1,
        v_train: int = -1,
        status: str = "",
        attrs: str = "",
    ) -> None:
        self.rows.append((key, kind, step, t0, t1, value, actor, sample, group, v_start, v_end, v_train, status, attrs))

    def __len__(self) -> int:
        return len(self.rows)

    def flush(self, builder: TraceBuilder) -> None:
        """Append everything gathered to the builder and start empty."""
        builder.extend_rows(self.rows)
        self.rows = []
