"""Fast bulk appends through TraceBuilder: rows gathered in plain lists, handed over in one call.

Parsing 10^4 steps x 300 keys or 10^5 episodes makes hundreds of thousands of rows; one builder call per row
would dominate the run time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchbed.trace import TraceBuilder


class AggRows:
    """Per-step agg rows (key, step, value, actor, attrs): single rows kept column-wise, runs of one key kept as
    arrays; handed to the builder in the order they came."""

    __slots__ = ("actor", "attrs", "blocks", "key", "step", "value")

    def __init__(self) -> None:
        self.key: list[str] = []
        self.step: list[int] = []
        self.value: list[float] = []
        self.actor: list[str] = []
        self.attrs: list[str] = []
        self.blocks: list[tuple[int, dict[str, Any]]] = []

    def add(self, key: str, step: int, value: float, actor: str = "", attrs: str = "") -> None:
        self.key.append(key)
        self.step.append(step)
        self.value.append(value)
        self.actor.append(actor)
        self.attrs.append(attrs)

    def extend(
        self, key: str, steps: Sequence[int] | np.ndarray, values: Sequence[float] | np.ndarray, actor: str = "",
        attrs: str = "",
    ) -> None:  # fmt: skip
        """Many rows of one key at once (lists or numpy arrays of equal length)."""
        if len(steps):
            self._seal()
            self.blocks.append((len(steps), {"key": key, "step": steps, "value": values, "actor": actor,
                                             "attrs": attrs}))  # fmt: skip

    def extend_numbers(
        self, key: str, steps: np.ndarray, values: np.ndarray, actor: str = "", attrs: str = "",
        keep: np.ndarray | None = None,
    ) -> None:  # fmt: skip
        """The rows of one key at the steps where its value is a number (NaN left out) and `keep`, if given, holds;
        the arrays themselves when every row is kept."""
        ok = ~np.isnan(values) if keep is None else ~np.isnan(values) & keep
        if ok.all():
            self.extend(key, steps, values, actor, attrs)
        else:
            self.extend(key, steps[ok], values[ok], actor, attrs)

    def __len__(self) -> int:
        return len(self.key) + sum(n for n, _ in self.blocks)

    def flush(self, builder: TraceBuilder) -> None:
        """Append everything gathered to the builder and start empty."""
        self._seal()
        for n, block in self.blocks:
            builder.extend_columns(n, {"kind": "agg", **block})
        self.blocks = []

    def _seal(self) -> None:
        if self.key:
            self.blocks.append((len(self.key), {"key": self.key, "step": self.step, "value": self.value,
                                                "actor": self.actor, "attrs": self.attrs}))  # fmt: skip
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
        prompt_tokens: int = -1,
        response_tokens: int = -1,
    ) -> None:
        self.rows.append((key, kind, step, t0, t1, value, actor, sample, group, v_start, v_end, v_train, status, attrs,
                          prompt_tokens, response_tokens))  # fmt: skip

    def __len__(self) -> int:
        return len(self.rows)

    def flush(self, builder: TraceBuilder) -> None:
        """Append everything gathered to the builder and start empty."""
        builder.extend_rows(self.rows)
        self.rows = []
