"""The history-source contract: a reader that recognises its locations and opens them as a History. Sources
outside the built-in ones (W&B, MLflow, TensorBoard, metrics JSONL, console) register in the
`benchbed.history_sources` entry-point group and are asked, in name order, about a location no built-in source
recognises."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from benchbed.adapterkit.histories.history import History, HistoryError, Progress
from benchbed.registry import Registry


class HistoryReader(ABC):
    """A tracker's histories: `detects` says whether a location (a path or a URI) is one, without reading it
    whole; `open` reads it. A reader is built with no arguments."""

    name: ClassVar[str]

    @abstractmethod
    def detects(self, location: str | Path) -> bool:
        """Whether `location` holds a history this reader opens."""

    @abstractmethod
    def open(self, location: str | Path, progress: Progress | None = None, timeout_s: float = 30.0) -> History:
        """The history at `location`; HistoryError, in one line, when it cannot be read."""


HISTORY_SOURCES: Registry[type[HistoryReader]] = Registry(
    "benchbed.history_sources", "history source", HistoryReader, HistoryError
)


def outside_kind(location: str | Path) -> str | None:
    """The first registered history source (by name) that detects `location`, or None."""
    for name in HISTORY_SOURCES.names():
        if HISTORY_SOURCES.load(name)().detects(location):
            return name
    return None
