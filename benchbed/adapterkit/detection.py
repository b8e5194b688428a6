"""What wrote a run: the framework release and trainer mode a parser found in it, with the evidence for each."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Detected:
    """The release and trainer mode found in a run; `evidence` says how each was found, by field name ("version",
    "mode", ...), so warnings and the trace's meta can say why. An adapter subclasses it for facts of its own."""

    version: str = ""
    mode: str = ""
    evidence: dict[str, str] = field(default_factory=dict)
