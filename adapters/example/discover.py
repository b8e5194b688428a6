"""Which files mark an example run (for `find_runs`): a run is the folder holding the toy loop's log."""

from __future__ import annotations

from benchbed.adapters.example.logformat import LOG

from benchbed.adapterkit.shared import by_name

marks_run = by_name((LOG,))
