"""Which files mark a TRL run (for `find_runs`): a run is the folder holding TRL's trainer_state.json."""

from __future__ import annotations

from benchbed.runs import by_name

STATE_FILE = "trainer_state.json"
marks_run = by_name((STATE_FILE,))
