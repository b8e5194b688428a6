"""Hypothesis profiles for the whole suite: `make test` draws the same examples on every run (derandomized, no
example database), so CI cannot fail on a case no earlier run drew; `make fuzz` (BENCHBED_HYPOTHESIS_PROFILE=fuzz)
draws new ones, many more of them."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("BENCHBED_HYPOTHESIS_PROFILE", "ci"))
