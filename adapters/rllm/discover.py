"""An rLLM run benchbed launched is the folder holding the renderer's hand-off (its `wandb/` run is read from there;
the walk for runs does not enter `wandb/` folders)."""

from __future__ import annotations

from benchbed.adapterkit.handoff import HANDOFF_FILE
from benchbed.adapterkit.shared import by_name

marks_run = by_name((HANDOFF_FILE,))
