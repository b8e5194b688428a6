"""The trainer step split into its five components, with one tolerance rule for timers that overrun the step.

The remainder component (trainer.other for most frameworks, trainer.wait where the wait is what is left) is the
step minus the named components. When the named ones exceed the step by more than TOLERANCE_S (timers printed
with two decimals and summed), the step is named in one warning; the remainder is clamped at 0 either way. A settled
step becomes its agg rows through `emit_step`."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchbed import keys as K
from benchbed.trace import TraceBuilder

TOLERANCE_S = 0.05
COMPONENTS = (K.TRAINER_WAIT, K.TRAINER_COMPUTE, K.TRAINER_WEIGHT_SYNC, K.TRAINER_CHECKPOINT, K.TRAINER_OTHER)
_SHOWN = 10


@dataclass
class Overrun:
    step: int
    by_s: float
    where: str


@dataclass
class StepBreakdown:
    """Settles steps one by one and remembers those whose components overran them."""

    remainder: str = K.TRAINER_OTHER
    what: str = "the named timers"
    block: str = "the step"
    overruns: list[Overrun] = field(default_factory=list)

    def settle(self, step: int, total: float, named: Mapping[str, float], where: str = "") -> dict[str, float]:
        """All five components of one step: the named ones as given (absent or NaN ones 0: a timer the run did not
        log), the remainder as what is left."""
        parts = dict.fromkeys(COMPONENTS, 0.0)
        for key, value in named.items():
            if not math.isnan(value):
                parts[key] += value
        rest = total - sum(v for k, v in parts.items() if k != self.remainder) - parts[self.remainder]
        if rest < -TOLERANCE_S:
            self.overruns.append(Overrun(step, -rest, where))
        parts[self.remainder] += max(0.0, rest)
        return parts

    def settle_many(
        self, steps: np.ndarray, total: np.ndarray, named: Mapping[str, np.ndarray], where: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """`settle` for many steps at once (arrays aligned with `steps`), with the same sums in the same order."""
        parts = {key: np.zeros(len(steps)) for key in COMPONENTS}
        for key, values in named.items():
            parts[key] = parts[key] + values
        others = np.zeros(len(steps))
        for key in COMPONENTS:
            if key != self.remainder:
                others = others + parts[key]
        rest = total - others - parts[self.remainder]
        for i in np.flatnonzero(rest < -TOLERANCE_S):
            self.overruns.append(Overrun(int(steps[i]), float(-rest[i]), where[i]))
        parts[self.remainder] = parts[self.remainder] + np.maximum(0.0, rest)
        return parts

    def rest(self, step: int, total: float, inside: float, where: str = "") -> float:
        """What is left of a block of `total` seconds once `inside` seconds of it are named, clamped at 0."""
        rest = total - inside
        if rest < -TOLERANCE_S:
            self.overruns.append(Overrun(step, -rest, where))
        return max(0.0, rest)

    def warning(self) -> str | None:
        """One line naming the overrun steps, or None."""
        if not self.overruns:
            return None
        shown = ", ".join(
            f"step {o.step} (by {o.by_s:.3f} s{', ' + o.where if o.where else ''})" for o in self.overruns[:_SHOWN]
        )
        more = f" and {len(self.overruns) - _SHOWN} more" if len(self.overruns) > _SHOWN else ""
        return (
            f"{self.remainder} clamped to 0 in {len(self.overruns)} step(s) where {self.what} exceed {self.block} "
            f"by more than {TOLERANCE_S} s: {shown}{more}"
        )


def emit_step(
    b: TraceBuilder, step: int, total: float, parts: Mapping[str, float], actor: str = "trainer",
    leave: Collection[str] = (),
) -> None:  # fmt: skip
    """One settled step as agg rows: trainer.step, then its components in `parts`' order, less those in `leave` (a
    component the framework has no such phase for, such as an SFT trainer's wait)."""
    b.agg(K.TRAINER_STEP, step, total, actor=actor)
    for key, value in parts.items():
        if key not in leave:
            b.agg(key, step, value, actor=actor)
