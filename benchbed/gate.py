"""The nightly regression gate's default settings, and the settings a run recorded as `benchbed history` reads them:
without pydantic, whose first model costs a fifth of a second of the command's start-up (`record.Gate` validates the
settings when a suite is loaded and when a record is written; this module only reads what was validated)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

DEFAULT_NIGHTS = 5  # previous nights whose points form the baseline
DEFAULT_ALPHA = 0.05  # significance level of the two-sided rank test
DEFAULT_MIN_EFFECT = 0.05  # minimum relative change of the median
DEFAULT_BAND_SD = 2.0  # a reference band reaches this many standard deviations either side of the reference mean


@dataclass(frozen=True)
class GateSettings:
    """A gate's settings, as `record.Gate` holds them."""

    nights: int = DEFAULT_NIGHTS
    alpha: float = DEFAULT_ALPHA
    min_effect: float = DEFAULT_MIN_EFFECT
    band: dict[str, float] = field(default_factory=dict)  # metric -> the band's least half-width, relative
    band_sd: float = DEFAULT_BAND_SD

    @classmethod
    def from_json(cls, text: str) -> GateSettings:
        """The settings of a record's `suite.gate` (JSON written by `record.Gate`); an unknown key is a TypeError."""
        return cls(**json.loads(text))
