"""What every live follower of a history (live_wandb, live_tensorboard, live_mlflow, live_console) hands to
live_history: the rows one read returned, and the follower's shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from benchbed.adapterkit.histories.history import HistorySource

Row = tuple[int, float | None, dict[str, float]]  # (step, wall time or None, {key: value}), as History.rows gives


@dataclass
class NewRows:
    """What one follower read returned: whole rows (and the file each came from, where the history has several),
    GPU samples as (wall times, source keys, values), and whether the run's end was read."""

    rows: list[Row] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    samples: tuple[list[float], list[str], list[float]] = field(default_factory=lambda: ([], [], []))
    ended: bool = False


class Follower(Protocol):
    """One history format followed by byte offset: `read` the new whole rows, `flush` the rows held back for a step
    that may still grow (at the run's end), `close` the files; `damage` once nothing more can be read."""

    warnings: list[str]
    config: dict[str, Any]
    source: HistorySource

    def read(self) -> NewRows: ...

    def flush(self) -> NewRows: ...

    @property
    def resets(self) -> int: ...

    @property
    def damage(self) -> str | None:
        """Where and why the history stopped being readable (one line naming the file and byte), once it has."""
        ...

    def close(self) -> None: ...


@dataclass
class TrackerFollower:
    """What the followers of a tracker's files share: the `location` followed, the warnings and run config read so
    far, and the history source that names the run (its tracker is the subclass's `tracker`)."""

    tracker: ClassVar[str]

    location: Path
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    source: HistorySource = field(init=False)

    def __post_init__(self) -> None:
        self.source = HistorySource(self.tracker, self.location.name, str(self.location))
