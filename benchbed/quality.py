"""Quality targets ("reward>=0.5", "eval/gsm8k/acc>=0.30"): what a run must reach, and the first step reaching it.

A target names a trace key: `reward` is the training reward (quality.reward_mean), `eval/<name>` a validation
score (quality.eval.<name>), and any full canonical key (quality.*, native.*) is taken as written. A trailing
`over N` ("reward>=0.3 over 5") judges the mean of the last N logged values instead of each value alone: a
small batch's per-step reward is noisy, and one lucky step should not count as learning."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchbed import keys as K
from benchbed.errors import BenchbedError

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_FORM = re.compile(
    rf"^\s*(?P<name>[^<>=\s][^<>=]*?)\s*(?P<op>>=|<=)\s*(?P<value>{_NUMBER})(?:\s+over\s+(?P<window>\d+))?\s*$"
)
_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le}


class TargetError(BenchbedError):
    """A quality target that cannot be read."""


@dataclass(frozen=True)
class Target:
    """A trace key and the bound its value must reach: `>=` for scores that rise, `<=` for ones that fall."""

    key: str
    op: str
    value: float
    window: int = 1  # the trailing mean of this many logged values is judged

    @classmethod
    def parse(cls, text: str) -> Target:
        found = _FORM.match(text)
        if found is None:
            raise TargetError(
                f"quality target {text!r}: expected NAME>=VALUE or NAME<=VALUE, optionally followed by 'over N', "
                "e.g. 'reward>=0.5', 'reward>=0.3 over 5' or 'eval/openai/gsm8k/acc/mean@1>=0.45'"
            )
        window = int(found["window"] or 1)
        if window < 1:
            raise TargetError(f"quality target {text!r}: 'over {window}': expected at least 1 logged value")
        try:
            return cls(key_of(found["name"]), found["op"], float(found["value"]), window)
        except TargetError as exc:
            raise TargetError(f"quality target {text!r}: {exc}") from None

    def met(self, value: float) -> bool:
        return _OPS[self.op](value, self.value)

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value:g}" + (f" over {self.window}" if self.window > 1 else "")


def key_of(name: str) -> str:
    """The trace key a target name means (see the module docstring)."""
    if name == "reward":
        return K.QUALITY_REWARD
    if name.startswith("eval/"):
        return K.eval_key(name.removeprefix("eval/"))  # as key maps name it
    if name.startswith(("quality.", "native.")):
        return name
    raise TargetError(
        f"name {name!r}: expected 'reward', 'eval/<validation score>' or a trace key (quality.*, native.*)"
    )


def first_reaching(steps: Sequence[int], values: Sequence[float], target: Target) -> int | None:
    """The first step (in step order) whose logged value, or with `over N` the mean of the N logged values ending
    there, meets the target; None when none does. A value is read where it was logged: no interpolation between
    validation steps, as MLPerf counts time to a quality. A NaN is not a logged value."""
    recent: list[float] = []
    for step, value in sorted(zip(steps, values, strict=True)):
        if value != value:
            continue
        recent = [*recent[1 - target.window :], value] if target.window > 1 else [value]
        if len(recent) == target.window and target.met(sum(recent) / target.window):
            return int(step)
    return None
