"""The nightly regression gate's default settings, and the settings a run recorded as `benchbed history` reads them:
without pydantic, whose first model costs a fifth of a second of the command's start-up (`record.Gate` validates the
settings when a suite is loaded and when a record is written; this module only reads what was validated)."""

from __future__ import annotations

import json
from dataclasses import dataclass

DEFAULT_NIGHTS = 5  # previous nights whose points form the baseline
DEFAULT_ALPHA = 0.05  # significance level of the two-sided rank test
DEFAULT_MIN_EFFECT = 0.05  # minimum relative change of the median


@dataclass(frozen=True)
class GateSettings:
    """A gate's nights, alpha and min_effect, as `record.Gate` holds them."""

    nights: int = DEFAULT_NIGHTS
    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT

    @classmethod
    def from_json(cls, text: str) -> GateSettings:
        """The settings of a record's `suite.gate` (JSON written by `record.Gate`); an unknown key is a TypeError."""
        return cls(**json.loads(text))
