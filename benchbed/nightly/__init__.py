"""Nightly suites as a library: `suite` (suite files), `run` (`run_night(suite, ...) -> Night`), `history` (series
of a store, change points, last-night verdicts) and `stats` (the regression gate and change points).

Nothing is imported here, so `benchbed.nightly.stats` stays as light as its own imports."""
