"""Settings for the whole suite.

Hypothesis profiles: `make test` draws the same examples on every run (derandomized, no example database), so CI
cannot fail on a case no earlier run drew; `make fuzz` (BENCHBED_HYPOTHESIS_PROFILE=fuzz) draws new ones, many more.

SIGINT: a shell starts a background job (`make test &`, `nohup ... &`) with SIGINT ignored, and a process inherits
that through exec, so the benchbed children of the Ctrl-C tests would ignore the SIGINT they are sent. The suite
handles SIGINT as a foreground process does, and its children start with the default."""

from __future__ import annotations

import os
import signal

from hypothesis import settings

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("BENCHBED_HYPOTHESIS_PROFILE", "ci"))
