"""The one file render leaves for parse: what benchbed launched and the shape parse cannot read from the logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

HANDOFF_FILE = "benchbed-plan.json"
HANDOFF_SCHEMA = 1


class Handoff(BaseModel):
    """Common fields every adapter writes; an adapter adds its own top-level fields (kept as extras)."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = HANDOFF_SCHEMA
    adapter: str
    mode: str | None = None
    argv: list[str] = Field(default_factory=list, description="the main command as launched")
    samples_per_step: int | None = None
    group_size: int | None = None
    concurrency: int | None = Field(None, description="generator sample slots, when the spec fixes them")

    def get(self, name: str, default: Any = None) -> Any:
        """A field or an adapter's own extra field by name."""
        if name in type(self).model_fields:
            return getattr(self, name)
        return (self.model_extra or {}).get(name, default)


def handoff_files(handoff: Handoff) -> dict[str, str]:
    """The LaunchPlan.files entry that writes the hand-off into the run directory."""
    return {HANDOFF_FILE: json.dumps(handoff.model_dump(mode="json"), indent=1) + "\n"}


def read_handoff(path: Path, warnings: list[str]) -> Handoff | None:
    """The hand-off at `path` (a file, or a run directory holding one); None, with a warning, if unreadable."""
    if path.is_dir():
        path = path / HANDOFF_FILE
    if not path.is_file():
        return None
    try:
        return Handoff.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        warnings.append(f"{path}: unreadable benchbed hand-off file ({first}); ignored")
        return None
