"""Which files mark a TRL run (for `find_runs`): a run is the folder holding TRL's trainer_state.json; one in a
`checkpoint-N` folder (the HF Trainer's checkpoint layout) marks the output_dir above it."""

from __future__ import annotations

import re
from pathlib import Path

STATE_FILE = "trainer_state.json"
CHECKPOINT = re.compile(r"checkpoint-(\d+)")


def marks_run(path: Path) -> Path | None:
    if path.name != STATE_FILE:
        return None
    return path.parent.parent if CHECKPOINT.fullmatch(path.parent.name) else path.parent


def latest_checkpoint_state(run_dir: Path) -> Path | None:
    """trainer_state.json of the highest `checkpoint-N` under `run_dir`, if any."""
    states = [(int(m[1]), p) for p in run_dir.glob(f"checkpoint-*/{STATE_FILE}")
              if (m := CHECKPOINT.fullmatch(p.parent.name))]  # fmt: skip
    return max(states)[1] if states else None
